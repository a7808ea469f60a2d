package devcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"cairn/internal/pki"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AdminConfig is a client configuration for the admin of the cluster in
// the state directory dir, for the API server at url.
func AdminConfig(dir, url string) *rest.Config {
	p := Layout{Dir: dir}.PKI()
	return &rest.Config{
		Host: url,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   filepath.Join(p, pki.CACertFile),
			CertFile: filepath.Join(p, pki.AdminCertFile),
			KeyFile:  filepath.Join(p, pki.AdminKeyFile),
		},
		Timeout: 10 * time.Second,
		QPS:     50, Burst: 100,
	}
}

// apiClients are admin clients for every server, tried in order, so
// that a command works while any server is up.
type apiClients []kubernetes.Interface

func newAPIClients(dir string, t Topology) (apiClients, error) {
	var out apiClients
	for _, u := range t.APIURLs() {
		c, err := kubernetes.NewForConfig(AdminConfig(dir, u))
		if err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// do runs fn against each server in turn until one succeeds.
func (cs apiClients) do(ctx context.Context, fn func(kubernetes.Interface) error) error {
	var errs []error
	for _, c := range cs {
		err := fn(c)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// ready reports whether the API server behind c answers /readyz.
func ready(ctx context.Context, c kubernetes.Interface) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}
