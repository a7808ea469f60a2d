package pki

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"time"
)

// DefaultValidity is how long an issued certificate is valid when the
// request does not say.
const DefaultValidity = 365 * 24 * time.Hour

// CertRequest describes a certificate for the CA to issue.
type CertRequest struct {
	// CommonName is the subject CN: a server's name or a client's user name.
	CommonName string
	// Organization is the subject O: a client's groups, or PeerOrganization.
	Organization []string
	// DNSNames and IPs are the subject alternative names a server answers on.
	DNSNames []string
	IPs      []net.IP
	// Server and Client select the extended key usages; at least one is needed.
	Server, Client bool
	// Validity is how long the certificate is valid; zero means DefaultValidity.
	// It never extends past the CA's own expiry.
	Validity time.Duration
}

// Issue creates a new key and a certificate for it signed by the CA, both PEM
// encoded (the key as PKCS#8).
func (ca *CA) Issue(req CertRequest) (certPEM, keyPEM []byte, err error) {
	if req.CommonName == "" {
		return nil, nil, errors.New("pki: certificate request has no common name")
	}
	if !req.Server && !req.Client {
		return nil, nil, fmt.Errorf("pki: certificate request for %q is neither for a server nor for a client", req.CommonName)
	}
	validity := req.Validity
	if validity <= 0 {
		validity = DefaultValidity
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	var usages []x509.ExtKeyUsage
	if req.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: req.CommonName, Organization: req.Organization},
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPs,
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           usages,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: issuing certificate for %q: %w", req.CommonName, err)
	}
	return encodeCertPEM(der), keyPEM, nil
}

// IssueTLS issues a certificate like Issue and returns it ready for a
// tls.Config, with Leaf set.
func (ca *CA) IssueTLS(req CertRequest) (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.Issue(req)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: loading issued certificate for %q: %w", req.CommonName, err)
	}
	return cert, nil
}

// Pool returns a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}
