package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Files of a node's credentials under NodeConfig.Dir.
const (
	// NodeKubeconfigFile is the node's kubeconfig; it names the files
	// under NodePKIDir.
	NodeKubeconfigFile = "kubelet.kubeconfig"
	// NodePKIDir holds the CA and the node's certificates and keys.
	NodePKIDir = "pki"

	nodeCAFile         = "ca.crt"
	nodeClientCertFile = "kubelet-client.crt"
	nodeClientKeyFile  = "kubelet-client.key"
	nodeServeCertFile  = "kubelet-serving.crt"
	nodeServeKeyFile   = "kubelet-serving.key"
)

// NodeCertValidity is how long node certificates are valid.
const NodeCertValidity = 365 * 24 * time.Hour

// NodeConfig says how a node gets its credentials with a join token.
type NodeConfig struct {
	// Servers are API server URLs (https://HOST:6443), tried in turn.
	Servers []string
	// Token is the join token; it is needed only while Dir holds no
	// usable credentials.
	Token string
	// NodeName is the node's name: its user is system:node:NodeName.
	NodeName string
	// Dir holds the credentials, reused on restart.
	Dir string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (c NodeConfig) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c NodeConfig) pkiPath(name string) string { return filepath.Join(c.Dir, NodePKIDir, name) }

// EnsureNodeKubeconfig returns the path of the node's kubeconfig. It
// reuses the credentials in Dir while they belong to this node and are not
// near their expiry; otherwise it bootstraps new ones with the token: a
// client certificate for system:node:NodeName, group system:nodes, signed
// by the cluster CA the token pins.
func EnsureNodeKubeconfig(ctx context.Context, c NodeConfig) (string, error) {
	path := filepath.Join(c.Dir, NodeKubeconfigFile)
	if err := c.checkCluster(); err != nil {
		return "", err
	}
	cert, err := c.loadCert(nodeClientCertFile, nodeClientKeyFile)
	if err == nil && c.usable(cert, nil, nil) {
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	if c.Token == "" {
		return "", fmt.Errorf("bootstrap: %s holds no usable credentials for node %s: pass --token", c.Dir, c.NodeName)
	}
	tok, err := ParseToken(c.Token)
	if err != nil {
		return "", err
	}
	if len(c.Servers) == 0 {
		return "", errors.New("bootstrap: joining with a token needs an API server URL (--server https://HOST:6443)")
	}
	var firstErr error
	for _, server := range c.Servers {
		err := c.bootstrapClient(ctx, server, tok, path)
		if err == nil {
			return path, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return "", firstErr
}

// bootstrapClient gets a client certificate through server and writes the
// CA, the certificate, its key and the kubeconfig.
func (c NodeConfig) bootstrapClient(ctx context.Context, server string, tok Token, kubeconfigPath string) error {
	cl, err := Connect(ctx, server, tok)
	if err != nil {
		return err
	}
	defer cl.Close()
	csrPEM, keyPEM, err := NewCSR(NodeUserPrefix+c.NodeName, []string{NodesGroup}, nil, nil)
	if err != nil {
		return err
	}
	certPEM, err := cl.Sign(ctx, csrPEM, UsageClient)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		perm os.FileMode
	}{
		{nodeCAFile, cl.CAPEM(), 0o644},
		{nodeClientKeyFile, keyPEM, 0o600},
		{nodeClientCertFile, certPEM, 0o644},
	}
	for _, f := range files {
		if err := writeFileAtomic(c.pkiPath(f.name), f.data, f.perm); err != nil {
			return err
		}
	}
	abs := func(name string) string { p, _ := filepath.Abs(c.pkiPath(name)); return p }
	cfg := clientcmdapi.NewConfig()
	const name = "cairn"
	user := NodeUserPrefix + c.NodeName
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: abs(nodeCAFile)}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: abs(nodeClientCertFile), ClientKey: abs(nodeClientKeyFile)}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return writeFileAtomic(kubeconfigPath, b, 0o600)
}

// EnsureServingCert returns the kubelet's serving certificate for the
// given names, and the cluster CA (PEM) that signs its clients. It reuses
// the one in Dir while it covers the names and is not near its expiry;
// otherwise it asks an API server for a new one, authenticated as the
// node by its client certificate (EnsureNodeKubeconfig runs first).
func EnsureServingCert(ctx context.Context, c NodeConfig, dnsNames []string, ips []net.IP) (tls.Certificate, []byte, error) {
	caPEM, err := os.ReadFile(c.pkiPath(nodeCAFile))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("bootstrap: the node's CA: %w", err)
	}
	cert, err := c.loadCert(nodeServeCertFile, nodeServeKeyFile)
	if err == nil && c.usable(cert, dnsNames, ips) {
		return cert, caPEM, nil
	}
	client, err := c.loadCert(nodeClientCertFile, nodeClientKeyFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("bootstrap: the node's client certificate: %w", err)
	}
	csrPEM, keyPEM, err := NewCSR(NodeUserPrefix+c.NodeName, []string{NodesGroup}, dnsNames, ips)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	var certPEM []byte
	var firstErr error
	for _, server := range c.Servers {
		cl, err := NewCertClient(server, caPEM, client)
		if err == nil {
			certPEM, err = cl.Sign(ctx, csrPEM, UsageServing)
			cl.Close()
		}
		if err == nil {
			break
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if certPEM == nil {
		if firstErr == nil {
			firstErr = errors.New("bootstrap: no API server to sign the kubelet's serving certificate (--server)")
		}
		return tls.Certificate{}, nil, firstErr
	}
	if err := writeFileAtomic(c.pkiPath(nodeServeKeyFile), keyPEM, 0o600); err != nil {
		return tls.Certificate{}, nil, err
	}
	if err := writeFileAtomic(c.pkiPath(nodeServeCertFile), certPEM, 0o644); err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("bootstrap: the signed serving certificate: %w", err)
	}
	return cert, caPEM, nil
}

// checkCluster refuses a token of another cluster than the one whose
// credentials Dir holds: reusing them would silently ignore the token.
func (c NodeConfig) checkCluster() error {
	if c.Token == "" {
		return nil
	}
	tok, err := ParseToken(c.Token)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(c.pkiPath(nodeCAFile))
	if err != nil {
		return nil
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	if got := CAHash(ca); got != tok.CAHash {
		return fmt.Errorf("bootstrap: %s holds credentials of another cluster (CA sha256 %s…) than the token's (%s…): use another data dir, or remove %s and %s",
			c.Dir, got[:16], tok.CAHash[:16], filepath.Join(c.Dir, NodeKubeconfigFile), filepath.Join(c.Dir, NodePKIDir))
	}
	return nil
}

func (c NodeConfig) loadCert(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(c.pkiPath(certFile), c.pkiPath(keyFile))
	if err != nil {
		return cert, err
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return cert, err
		}
	}
	return cert, nil
}

// usable reports whether cert names this node, covers every given name,
// and has more than a fifth of its lifetime left, the point at which it
// is renewed.
func (c NodeConfig) usable(cert tls.Certificate, dnsNames []string, ips []net.IP) bool {
	leaf := cert.Leaf
	if leaf.Subject.CommonName != NodeUserPrefix+c.NodeName {
		return false
	}
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	if !c.now().Before(leaf.NotAfter.Add(-life / 5)) {
		return false
	}
	for _, n := range dnsNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}
