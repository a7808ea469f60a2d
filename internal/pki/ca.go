package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// CAValidity is how long a new cluster CA is valid.
const CAValidity = 10 * 365 * 24 * time.Hour

// clockSkew backdates NotBefore so that a certificate minted on one machine
// is already valid on a peer whose clock runs a little behind.
const clockSkew = time.Hour

// CA is a loaded cluster certificate authority, used to issue certificates
// and to build TLS configurations that trust only this CA.
type CA struct {
	// Cert is the parsed CA certificate.
	Cert *x509.Certificate
	// Key signs the certificates the CA issues.
	Key crypto.Signer
	// CertPEM is the CA certificate as written in ca.crt, handed to clients
	// that need to trust the cluster.
	CertPEM []byte
}

// LoadCA reads the CA from a PKI dir written by Init.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := readPKIFile(dir, CACertFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPKIFile(dir, CAKeyFile)
	if err != nil {
		return nil, err
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", filepath.Join(dir, CACertFile), err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("pki: %s is not a CA certificate", filepath.Join(dir, CACertFile))
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", filepath.Join(dir, CAKeyFile), err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("pki: %s does not belong to %s (files from two different PKI dirs?)",
			filepath.Join(dir, CAKeyFile), filepath.Join(dir, CACertFile))
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}, nil
}

// readPKIFile reads one file of a PKI dir and, when it is missing, tells the
// user how to create the dir.
func readPKIFile(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pki: %s not found: run `cairn pki init --dir %s` first", path, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return data, nil
}

// newCA creates a self-signed CA in memory.
func newCA(now time.Time) (*CA, []byte, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: CACommonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaf certificates only, never intermediate CAs.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: parsing new CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCertPEM(der)}, keyPEM, nil
}

// newKey generates an ECDSA P-256 key and its PKCS#8 PEM encoding.
func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generating key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: encoding key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newSerial returns a random 128-bit serial number, so that certificates
// minted independently by several servers never collide.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("pki: generating serial number: %w", err)
	}
	return serial, nil
}

func encodeCertPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate found")
	}
	return x509.ParseCertificate(block.Bytes)
}

// parseKeyPEM accepts the PKCS#8 keys Init writes and the SEC 1 and PKCS#1
// keys that openssl and other tools write.
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM private key found")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	return signer, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// Fingerprint identifies the CA: the hex SHA-256 of its certificate. Data
// dirs record it so that they are never started under another cluster's CA.
func (ca *CA) Fingerprint() string {
	sum := sha256.Sum256(ca.Cert.Raw)
	return hex.EncodeToString(sum[:])
}
