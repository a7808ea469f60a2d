// Package server is the kubelet's HTTPS API (port 10250): container
// logs for the API server's pods/log, exec, attach and portForward for
// its pods/exec, pods/attach and pods/portforward, and /healthz. Clients must present
// a certificate of the cluster CA; the API server does.
package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"cairn/node/kubelet/logs"
)

// APIServerUser is the user name of the client certificate the API
// servers present to kubelets; it is allowed by default.
const APIServerUser = "kube-apiserver-kubelet-client"

// MastersGroup is the group whose members may use the API.
const MastersGroup = "system:masters"

// Log is a container's log file, found for a request.
type Log struct {
	Path string
	// Running reports whether the container still runs, which ends a
	// followed log when false.
	Running func() bool
}

// Logs finds containers' logs. Its errors may carry an HTTP status by
// implementing HTTPStatus() int; others answer 500.
type Logs interface {
	ContainerLog(ctx context.Context, namespace, pod, container string, previous bool) (Log, error)
}

// Config is what a Server needs.
type Config struct {
	// TLS serves the API; its ClientCAs (the cluster CA) authenticate
	// clients. ClientAuth is set to verify a certificate when given.
	TLS  *tls.Config
	Logs Logs
	// Users and Groups are allowed to use the API; APIServerUser and
	// MastersGroup when both are empty.
	Users, Groups []string
	Logger        *slog.Logger
	// Metrics, if set, is served at /metrics to the same clients.
	Metrics http.Handler
	// Streams, if set, serves exec, attach and portForward.
	Streams Streams
}

// Server serves the kubelet API.
type Server struct {
	cfg  Config
	http *http.Server
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.TLS == nil || cfg.TLS.ClientCAs == nil {
		return nil, errors.New("server: the kubelet API needs a TLS configuration with the cluster CA as ClientCAs")
	}
	if cfg.Logs == nil {
		return nil, errors.New("server: no log source")
	}
	if len(cfg.Users) == 0 && len(cfg.Groups) == 0 {
		cfg.Users, cfg.Groups = []string{APIServerUser}, []string{MastersGroup}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := cfg.TLS.Clone()
	t.ClientAuth = tls.VerifyClientCertIfGiven
	if len(t.NextProtos) == 0 {
		t.NextProtos = []string{"h2", "http/1.1"}
	}
	s := &Server{cfg: cfg}
	s.http = &http.Server{Handler: s.Handler(), TLSConfig: t, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug)}
	return s, nil
}

// Handler routes the API; requests must come over the Server's TLS.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "ok")
	})
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", s.authorized(http.HandlerFunc(s.containerLogs)))
	if s.cfg.Metrics != nil {
		mux.Handle("GET /metrics", s.authorized(s.cfg.Metrics))
	}
	if s.cfg.Streams != nil {
		// GET for websockets, POST for SPDY, as the kubelet takes them.
		for _, method := range []string{"GET", "POST"} {
			mux.Handle(method+" /exec/{namespace}/{pod}/{container}", s.authorized(http.HandlerFunc(s.exec)))
			mux.Handle(method+" /attach/{namespace}/{pod}/{container}", s.authorized(http.HandlerFunc(s.attach)))
			mux.Handle(method+" /portForward/{namespace}/{pod}", s.authorized(http.HandlerFunc(s.portForward)))
		}
	}
	mux.Handle("/", s.authorized(http.NotFoundHandler()))
	return mux
}

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.ServeTLS(ln, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server, waiting for requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	return err
}

// authorized lets through requests with a verified client certificate
// (401 without one) of an allowed user or group (403 otherwise).
func (s *Server) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cert := verifiedClient(r)
		if cert == nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if !slices.Contains(s.cfg.Users, cert.Subject.CommonName) && !slices.ContainsFunc(cert.Subject.Organization, func(g string) bool {
			return slices.Contains(s.cfg.Groups, g)
		}) {
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource=proxy)", cert.Subject.CommonName), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func verifiedClient(r *http.Request) *x509.Certificate {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil
	}
	return r.TLS.VerifiedChains[0][0]
}

// containerLogs serves a container's log with PodLogOptions' query
// parameters.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	opts, previous, err := parseLogOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	l, err := s.cfg.Logs.ContainerLog(r.Context(), ns, pod, container, previous)
	if err != nil {
		status := http.StatusInternalServerError
		var hs interface{ HTTPStatus() int }
		if errors.As(err, &hs) {
			status = hs.HTTPStatus()
		}
		http.Error(w, err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	fw := &flushWriter{w: w, flush: http.NewResponseController(w).Flush}
	if err := logs.Read(r.Context(), l.Path, opts, fw, l.Running); err != nil && !fw.wrote {
		status := http.StatusInternalServerError
		if errors.Is(err, fs.ErrNotExist) {
			status = http.StatusNotFound
		}
		http.Error(w, fmt.Sprintf("failed to read the log of container %q in pod %q: %v", container, pod, err), status)
	}
}

// parseLogOptions reads the query as the API server sends it.
func parseLogOptions(r *http.Request) (logs.Options, bool, error) {
	q := r.URL.Query()
	var o logs.Options
	boolean := func(key string) (bool, error) {
		v := q.Get(key)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("invalid %s %q", key, v)
		}
		return b, nil
	}
	number := func(key string) (*int64, error) {
		v := q.Get(key)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid %s %q", key, v)
		}
		return &n, nil
	}
	var err error
	var previous bool
	if o.Follow, err = boolean("follow"); err != nil {
		return o, false, err
	}
	if previous, err = boolean("previous"); err != nil {
		return o, false, err
	}
	if o.Timestamps, err = boolean("timestamps"); err != nil {
		return o, false, err
	}
	if o.TailLines, err = number("tailLines"); err != nil {
		return o, false, err
	}
	if o.LimitBytes, err = number("limitBytes"); err != nil {
		return o, false, err
	}
	since, err := number("sinceSeconds")
	if err != nil {
		return o, false, err
	}
	if since != nil {
		o.Since = time.Now().Add(-time.Duration(*since) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, false, fmt.Errorf("invalid sinceTime %q", v)
		}
		o.Since = t
	}
	if o.TailLines != nil && *o.TailLines < 0 {
		return o, false, errors.New("tailLines must be at least 0")
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		return o, false, errors.New("limitBytes must be at least 1")
	}
	return o, previous, nil
}

// flushWriter sends each write at once, so followed logs stream.
type flushWriter struct {
	w     http.ResponseWriter
	flush func() error
	wrote bool
}

// Write implements io.Writer.
func (f *flushWriter) Write(p []byte) (int, error) {
	f.wrote = true
	n, err := f.w.Write(p)
	if err == nil {
		_ = f.flush()
	}
	return n, err
}
