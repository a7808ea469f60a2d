package bootstrap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"

	"cairn/internal/pki"
)

// NewCSR makes a new ECDSA P-256 key and a certificate signing request
// for it, both PEM (the key PKCS#8). The key never leaves the machine.
func NewCSR(commonName string, orgs, dnsNames []string, ips []net.IP) (csrPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: generating a key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: commonName, Organization: orgs},
		DNSNames:    dnsNames,
		IPAddresses: ips,
	}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: creating a certificate request: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap: encoding a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// ParseCSR decodes a PEM certificate request and checks its signature.
func ParseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("bootstrap: no PEM CERTIFICATE REQUEST found")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: parsing the certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("bootstrap: the certificate request's signature is invalid: %w", err)
	}
	return csr, nil
}

// NodeOf checks that csr asks for a node certificate of the given usage
// and returns the node's name. A client certificate names nothing; a
// serving certificate names DNS names and IPs only.
func NodeOf(csr *x509.CertificateRequest, usage string) (string, error) {
	cn := csr.Subject.CommonName
	node, ok := strings.CutPrefix(cn, NodeUserPrefix)
	if !ok || node == "" {
		return "", fmt.Errorf("bootstrap: the request's common name %q is not %s<node name>", cn, NodeUserPrefix)
	}
	if !slices.Equal(csr.Subject.Organization, []string{NodesGroup}) {
		return "", fmt.Errorf("bootstrap: the request's organization %q is not [%s]", csr.Subject.Organization, NodesGroup)
	}
	if len(csr.EmailAddresses) > 0 || len(csr.URIs) > 0 {
		return "", errors.New("bootstrap: node certificates carry no e-mail or URI names")
	}
	switch usage {
	case UsageClient:
		if len(csr.DNSNames) > 0 || len(csr.IPAddresses) > 0 {
			return "", errors.New("bootstrap: a node client certificate carries no DNS names or IPs")
		}
	case UsageServing:
		if len(csr.DNSNames) == 0 && len(csr.IPAddresses) == 0 {
			return "", errors.New("bootstrap: a serving certificate needs at least one DNS name or IP")
		}
	default:
		return "", fmt.Errorf("bootstrap: unknown certificate usage %q (want %s or %s)", usage, UsageClient, UsageServing)
	}
	return node, nil
}

// signBackdate backdates NotBefore, so that a certificate is valid on a
// machine whose clock runs a little behind the signer's.
const signBackdate = time.Hour

// SignCSR issues a certificate for csr's key and names, signed by ca,
// valid for validity (capped at the CA's own expiry).
func SignCSR(ca *pki.CA, csr *x509.CertificateRequest, usage string, validity time.Duration) ([]byte, error) {
	var eku []x509.ExtKeyUsage
	switch usage {
	case UsageClient:
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case UsageServing:
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	default:
		return nil, fmt.Errorf("bootstrap: unknown certificate usage %q", usage)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("bootstrap: generating a serial number: %w", err)
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: csr.Subject.CommonName, Organization: csr.Subject.Organization},
		DNSNames:              csr.DNSNames,
		IPAddresses:           csr.IPAddresses,
		NotBefore:             now.Add(-signBackdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           eku,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: signing a certificate for %q: %w", csr.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
