package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/openapi"
	"cairn/apiserver/registry"
	"cairn/apiserver/storage"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// Config is what an API server needs.
type Config struct {
	// Listen is the HTTPS address, e.g. 127.0.0.1:6443.
	Listen string
	// TLS serves the API; it should request client certificates from the
	// cluster CA (tls.VerifyClientCertIfGiven) so they can authenticate.
	TLS           *tls.Config
	Authenticator authn.Authenticator
	Resources     []*registry.Resource
	// Ready reports whether the store can serve (a quorum is reachable);
	// /readyz fails while it returns an error.
	Ready  func(ctx context.Context) error
	Logger *slog.Logger
	// GitVersion is reported by /version.
	GitVersion string
	// EventTTL is how long events are kept (Kubernetes' --event-ttl).
	EventTTL time.Duration
	// NotReadyTolerationSeconds and UnreachableTolerationSeconds are the
	// NoExecute tolerations new pods get for the not-ready and unreachable
	// node taints (DefaultTolerationSeconds when zero).
	NotReadyTolerationSeconds, UnreachableTolerationSeconds time.Duration
	// Storage reaches the store; one object store per resource is built
	// on it.
	Storage storage.Backend
	// ServiceCIDR is the range service cluster IPs come from
	// (DefaultServiceCIDR when empty); its first IP is the kubernetes
	// service's.
	ServiceCIDR string
	// AdvertiseAddress (host:port) is where clients reach this server; it
	// is listed in the kubernetes service's endpoints. Listen when empty.
	AdvertiseAddress string
	// EndpointLeaseTTL is how long the kubernetes service keeps listing
	// an API server that stopped renewing its lease
	// (DefaultEndpointLeaseTTL when zero).
	EndpointLeaseTTL time.Duration
	// KubeletClientTLS authenticates this server to the kubelets (node
	// agents) with a client certificate, for pods/log; without it pod
	// logs answer 503.
	KubeletClientTLS *tls.Config
	// Bootstrap turns on joining with tokens (bootstrap_endpoint.go);
	// nil: off.
	Bootstrap *BootstrapConfig
	// ServiceAccounts turns on service account tokens; nil: off.
	ServiceAccounts *ServiceAccountConfig
	// Metrics receives the request metrics; MetricsHandler, if set, is
	// served at /metrics to clients allowed to get it (the process's whole
	// registry, as kube-apiserver serves its own).
	Metrics        prometheus.Registerer
	MetricsHandler http.Handler
}

// Server serves the Kubernetes REST API.
type Server struct {
	cfg       Config
	log       *slog.Logger
	discovery *discovery
	openapi   *openapi.Documents
	resources map[schema.GroupVersionResource]*registry.Resource
	handlers  map[schema.GroupVersionResource]*restHandler
	http      *http.Server
	// services allocates cluster IPs and node ports; nil when services
	// are not served.
	services *serviceAllocator
	metrics  *requestMetrics
	rbac     *rbacPolicy
}

// KubernetesVersion is the Kubernetes API version this server implements.
const KubernetesVersion = "v1.37.2"

// New builds an API server; Serve starts it.
func New(cfg Config) (*Server, error) {
	if cfg.Authenticator == nil {
		return nil, errors.New("apiserver: an authenticator is required (anonymous requests are refused)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NotReadyTolerationSeconds == 0 {
		cfg.NotReadyTolerationSeconds = DefaultTolerationSeconds
	}
	if cfg.UnreachableTolerationSeconds == 0 {
		cfg.UnreachableTolerationSeconds = DefaultTolerationSeconds
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = time.Hour
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "apiserver"),
		discovery: newDiscovery(servedResources(cfg)),
		resources: map[schema.GroupVersionResource]*registry.Resource{},
	}
	if cfg.Bootstrap != nil {
		s.cfg.Authenticator = s.withBootstrapTokens(s.cfg.Authenticator)
	}
	if cfg.ServiceAccounts != nil {
		s.cfg.Authenticator = s.withServiceAccounts(s.cfg.Authenticator)
	}
	var err error
	if s.metrics, err = newRequestMetrics(cfg.Metrics); err != nil {
		return nil, fmt.Errorf("apiserver: metrics: %w", err)
	}
	openAPI, err := newOpenAPI(cfg)
	if err != nil {
		return nil, err
	}
	s.openapi = openAPI
	s.handlers = map[schema.GroupVersionResource]*restHandler{}
	for _, r := range cfg.Resources {
		s.resources[r.GVR] = r
		st := storage.NewStore(cfg.Storage, "/registry/"+r.GVR.Resource, r.New, r.NewList,
			storage.StoreOptions{Logger: s.log.With("resource", r.GVR.GroupResource().String()), Resource: r.GVR.GroupResource(),
				FenceOf: fenceOf(r.GVR)})
		s.handlers[r.GVR] = &restHandler{s: s, res: r, store: st, createFields: newCreateFieldsCache()}
	}
	s.rbac = s.newRBACPolicy()
	services, err := s.newServiceAllocator()
	if err != nil {
		return nil, err
	}
	s.services = services
	s.http = &http.Server{Handler: s.Handler(), TLSConfig: cfg.TLS, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Start runs the watch caches, the store compactor and the creation of
// the system namespaces until ctx ends.
func (s *Server) Start(ctx context.Context) {
	for _, h := range s.handlers {
		go h.store.Run(ctx)
	}
	go storage.RunCompactor(ctx, s.cfg.Storage.KV, storage.DefaultCompactionInterval, s.log)
	go s.ensureSystemObjects(ctx)
	if s.cfg.Bootstrap != nil {
		go s.cleanExpiredTokens(ctx)
	}
}

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server, ending open watches.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close stops the server at once, closing every connection without
// waiting for the requests on them, as the death of its process would.
func (s *Server) Close() error { return s.http.Close() }

// Handler returns the API's HTTP handler: health endpoints are open, the
// rest requires an authenticated user.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/livez", "/healthz":
			writeText(w, http.StatusOK, "ok")
			return
		case "/readyz":
			s.serveReady(w, r)
			return
		}
		if s.serveCACerts(w, r) {
			return
		}
		user, ok, err := s.cfg.Authenticator.Authenticate(r)
		if err != nil || !ok {
			msg := "Unauthorized"
			if err != nil {
				msg = err.Error()
			}
			writeError(w, apierrors.NewUnauthorized(msg))
			return
		}
		if user, err = s.impersonate(r, user); err != nil {
			writeError(w, err)
			return
		}
		r = r.WithContext(withUser(r.Context(), user))
		if s.serveBootstrap(w, r, user) {
			return
		}
		if r, err = withFence(r); err != nil {
			writeError(w, err)
			return
		}
		s.serveAuthenticated(w, r)
	})
}

func (s *Server) serveAuthenticated(w http.ResponseWriter, r *http.Request) {
	if u, ok := UserFrom(r.Context()); !ok {
		writeError(w, apierrors.NewUnauthorized("Unauthorized"))
		return
	} else if err := s.checkAccess(r, u); err != nil {
		writeError(w, err)
		return
	}
	if r.URL.Path == "/metrics" && s.cfg.MetricsHandler != nil {
		s.cfg.MetricsHandler.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/version" {
		writeJSON(w, http.StatusOK, s.version())
		return
	}
	if s.serveIssuerDiscovery(w, r) {
		return
	}
	if s.serveOpenAPI(w, r) {
		return
	}
	if r.Method == http.MethodGet && s.discovery.serve(w, r) {
		return
	}
	info, ok := parseRequestInfo(r)
	if !ok {
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	if info.Group == "" && info.Resource == "bindings" {
		s.serveBindings(w, r, info)
		return
	}
	if s.serveSelfReview(w, r, info) {
		return
	}
	res, ok := s.resources[schema.GroupVersionResource{Group: info.Group, Version: info.Version, Resource: info.Resource}]
	if !ok {
		writeError(w, apierrors.NewNotFound(schema.GroupResource{Group: info.Group, Resource: info.Resource}, ""))
		return
	}
	s.serveResource(w, r, info, res)
}

// serveResource handles the REST verbs on one resource.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo, res *registry.Resource) {
	s.metrics.observe(w, r, info, func(w http.ResponseWriter) { s.handlers[res.GVR].serve(w, r, info) })
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("[-]store failed: %v\nreadyz check failed", err))
			return
		}
	}
	if !s.rbac.bootstrapped.Load() {
		writeText(w, http.StatusServiceUnavailable, "[-]poststarthook/rbac/bootstrap-roles failed: the default roles and bindings are not in place yet\nreadyz check failed")
		return
	}
	writeText(w, http.StatusOK, "ok")
}

func (s *Server) version() *version.Info {
	return &version.Info{
		Major: "1", Minor: "37", GitVersion: KubernetesVersion + "+cairn-" + s.cfg.GitVersion,
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

type userKey struct{}

func withUser(ctx context.Context, u *authn.User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user of a request context.
func UserFrom(ctx context.Context) (*authn.User, bool) {
	u, ok := ctx.Value(userKey{}).(*authn.User)
	return u, ok
}
