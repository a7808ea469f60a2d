// Package kubeconfig builds kubeconfig files with client certificates from
// the cluster CA, for the admin and for any user an operator names.
package kubeconfig

import (
	"fmt"
	"os"
	"path/filepath"

	"cairn/internal/pki"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ClusterName is the cluster, context and default name in the files.
const ClusterName = "cairn"

// Options says who the kubeconfig is for and where the API servers are.
type Options struct {
	Servers []string // https://host:6443, the first becomes the server
	User    string
	Groups  []string
}

// Build issues a client certificate for the user and returns the
// kubeconfig content.
func Build(ca *pki.CA, o Options) ([]byte, error) {
	if len(o.Servers) == 0 {
		return nil, fmt.Errorf("kubeconfig: no API server address")
	}
	if o.User == "" {
		return nil, fmt.Errorf("kubeconfig: --user is required")
	}
	certPEM, keyPEM, err := ca.Issue(pki.CertRequest{CommonName: o.User, Organization: o.Groups, Client: true})
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ClusterName] = &clientcmdapi.Cluster{Server: o.Servers[0], CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos[o.User] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[ClusterName] = &clientcmdapi.Context{Cluster: ClusterName, AuthInfo: o.User, Namespace: "default"}
	cfg.CurrentContext = ClusterName
	return clientcmd.Write(*cfg)
}

// WriteFile writes a kubeconfig readable only by its owner.
func WriteFile(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
