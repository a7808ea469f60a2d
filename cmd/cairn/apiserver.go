package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"cairn/apiserver"
	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/apiserver/serviceaccount"
	"cairn/apiserver/storage"
	"cairn/internal/kubeconfig"
	"cairn/internal/pki"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addAPIFlags adds the API server's flags, shared by `cairn server` and
// `cairn apiserver`.
func addAPIFlags(f *pflag.FlagSet) {
	f.String("api-listen", "127.0.0.1:6443", "HTTPS address of the Kubernetes API")
	f.String("advertise-api", "", "API address clients and kubeconfigs use (default --api-listen)")
	f.String("token-auth-file", "", "CSV file of bearer tokens: token,user,uid[,\"group1,group2\"]")
	f.Duration("event-ttl", time.Hour, "how long events are kept")
	f.Int("default-not-ready-toleration-seconds", 300, "NoExecute toleration of the not-ready node taint added to pods that have none")
	f.Int("default-unreachable-toleration-seconds", 300, "NoExecute toleration of the unreachable node taint added to pods that have none")
	f.String("service-cidr", apiserver.DefaultServiceCIDR, "range of service cluster IPs; its first IP is the kubernetes service's")
	f.String("write-kubeconfig", "", "also write the admin kubeconfig here (e.g. ~/.cairn/admin.kubeconfig, where \"cairn kubectl\" looks)")
	f.String("service-account-issuer", serviceaccount.DefaultIssuer, "the \"iss\" of service account tokens (serviceaccounts/token), also their audience unless --api-audiences is given")
	f.StringSlice("api-audiences", nil, "audiences a service account token must name to be accepted by the API (default: the issuer)")
	f.String("service-account-jwks-uri", "", "jwks_uri in /.well-known/openid-configuration, for verifiers outside the cluster (default https://ADVERTISE-API/openid/v1/jwks)")
	f.Duration("service-account-max-token-expiration", apiserver.DefaultMaxTokenExpiration, "longest lifetime a token request gets; longer requests are shortened to it")
	f.StringSlice("tls-san", nil, "extra DNS names and IP addresses of the API serving certificate, e.g. a load balancer's (repeat or comma separate)")
}

// serviceAccountConfig reads the service account flags; the signing key
// comes from the CA's key, the same on every server.
func serviceAccountConfig(f *pflag.FlagSet, ca *pki.CA) (*apiserver.ServiceAccountConfig, error) {
	issuer, _ := f.GetString("service-account-issuer")
	audiences, _ := f.GetStringSlice("api-audiences")
	maxLife, _ := f.GetDuration("service-account-max-token-expiration")
	jwksURI, _ := f.GetString("service-account-jwks-uri")
	if maxLife < 10*time.Minute {
		return nil, fmt.Errorf("--service-account-max-token-expiration %v: must be at least 10m, the shortest lifetime a token request may ask for", maxLife)
	}
	signer, err := serviceaccount.NewSigner(ca.Key, issuer)
	if err != nil {
		return nil, err
	}
	return &apiserver.ServiceAccountConfig{Signer: signer, Audiences: audiences, MaxExpiration: maxLife, JWKSURI: jwksURI, CACert: ca.CertPEM}, nil
}

// kubeletClientUser is the identity an API server presents to kubelets
// when it proxies pods/log and the other node subresources.
const kubeletClientUser = "system:cairn-apiserver-kubelet-client"

// apiOptions is what starting an API server takes besides its flags.
type apiOptions struct {
	name    string // server name, for its certificate
	ca      *pki.CA
	backend storage.Backend
	ready   func(context.Context) error
	dataDir string // where admin.kubeconfig is written; empty: not written
	log     *slog.Logger
	// bootstrap turns on joining with tokens; nil: off.
	bootstrap *apiserver.BootstrapConfig
	// metrics is the process's registry, served at the API's /metrics.
	metrics *prometheus.Registry
}

// startAPIServer serves the Kubernetes API until ctx ends. It returns the
// URL at which this process reaches its own API server (loopback when the
// listen address is unspecified).
func startAPIServer(ctx context.Context, f *pflag.FlagSet, o apiOptions) (string, error) {
	str := func(n string) string { v, _ := f.GetString(n); return v }
	listen := str("api-listen")
	advertise := str("advertise-api")
	if advertise == "" {
		advertise = listen
	}
	host, _, err := net.SplitHostPort(advertise)
	if err != nil {
		return "", fmt.Errorf("--advertise-api %q: %w", advertise, err)
	}
	serviceCIDR := str("service-cidr")
	kubernetesIP, err := apiserver.FirstServiceIP(serviceCIDR)
	if err != nil {
		return "", fmt.Errorf("--service-cidr: %w", err)
	}
	sans := []string{host, kubernetesIP, "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	extra, _ := f.GetStringSlice("tls-san")
	for _, san := range extra {
		if san = strings.TrimSpace(san); san != "" {
			sans = append(sans, san)
		}
	}
	serving, err := o.ca.ServerConfig(o.name, sans)
	if err != nil {
		return "", err
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	chain := authn.Chain{authn.ClientCert{}}
	if tf := str("token-auth-file"); tf != "" {
		tokens, err := authn.LoadTokenFile(tf)
		if err != nil {
			return "", err
		}
		chain = append(chain, tokens)
	}
	sa, err := serviceAccountConfig(f, o.ca)
	if err != nil {
		return "", err
	}
	ttl, _ := f.GetDuration("event-ttl")
	notReady, _ := f.GetInt("default-not-ready-toleration-seconds")
	unreachable, _ := f.GetInt("default-unreachable-toleration-seconds")
	if notReady <= 0 || unreachable <= 0 {
		return "", fmt.Errorf("--default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds must be positive")
	}
	kubeletCert, err := o.ca.IssueTLS(pki.CertRequest{CommonName: kubeletClientUser, Organization: []string{pki.AdminOrganization}, Client: true})
	if err != nil {
		return "", err
	}
	kubeletTLS := &tls.Config{Certificates: []tls.Certificate{kubeletCert}, RootCAs: o.ca.Pool(), MinVersion: tls.VersionTLS12}
	api, err := apiserver.New(apiserver.Config{
		Listen: listen, TLS: serving, Authenticator: chain, Resources: registry.All(),
		Ready: o.ready, Logger: o.log, GitVersion: version, EventTTL: ttl, Storage: o.backend,
		ServiceCIDR: serviceCIDR, AdvertiseAddress: advertise, KubeletClientTLS: kubeletTLS,
		NotReadyTolerationSeconds:    time.Duration(notReady) * time.Second,
		UnreachableTolerationSeconds: time.Duration(unreachable) * time.Second,
		Bootstrap:                    o.bootstrap,
		ServiceAccounts:              sa,
		Metrics:                      o.metrics,
		MetricsHandler:               promhttp.HandlerFor(o.metrics, promhttp.HandlerOpts{}),
	})
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", fmt.Errorf("--api-listen %s: %w", listen, err)
	}
	api.Start(ctx)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		api.Shutdown(sctx)
	}()
	go func() {
		if err := api.Serve(ln); err != nil {
			o.log.Error("API server stopped", "err", err)
		}
	}()
	var paths []string
	if o.dataDir != "" {
		paths = append(paths, filepath.Join(o.dataDir, "admin.kubeconfig"))
	}
	if p := str("write-kubeconfig"); p != "" {
		paths = append(paths, p)
	}
	if len(paths) > 0 {
		b, err := kubeconfig.Build(o.ca, kubeconfig.Options{Servers: []string{"https://" + advertise}, User: pki.AdminCommonName, Groups: []string{pki.AdminOrganization}})
		if err != nil {
			return "", err
		}
		for _, p := range paths {
			if err := kubeconfig.WriteFile(p, b); err != nil {
				return "", err
			}
		}
	}
	o.log.Info("Kubernetes API serving", "addr", "https://"+advertise, "kubeconfigs", paths)
	return loopbackURL(ln.Addr()), nil
}

func newAPIServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the Kubernetes API server on its own, against a store reached over the network",
		Long: `Run only the Kubernetes API server, reaching the store through its etcd API:

  cairn apiserver --name api1 --pki-dir PKI --store-endpoints https://s1:2379,https://s2:2379 \
    --store-cacert PKI/ca.crt --store-cert PKI/admin.crt --store-key PKI/admin.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			log, err := newLogger(cmd)
			if err != nil {
				return err
			}
			name, _ := f.GetString("name")
			dir, _ := f.GetString("pki-dir")
			if dir == "" {
				return errors.New("--pki-dir is required: the API serves with a certificate from the cluster CA")
			}
			ca, err := pki.LoadCA(dir)
			if err != nil {
				return err
			}
			cli, err := newStoreClientFlags(cmd, "store-")
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			dataDir, _ := f.GetString("data-dir")
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			if _, err := startAPIServer(ctx, f, apiOptions{name: name, ca: ca, backend: apiserver.RemoteBackend(cli), metrics: reg,
				ready: apiserver.StoreReady(cli.KV), dataDir: dataDir, log: log}); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.String("name", "apiserver", "name in the serving certificate")
	f.String("pki-dir", "", "directory with the cluster CA (required)")
	f.String("data-dir", "", "where to write admin.kubeconfig (optional)")
	addAPIFlags(f)
	addStoreFlags(f, "store-")
	return cmd
}

// loopbackURL is the URL a process uses to reach its own listener at addr.
func loopbackURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "https://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, port)
}
