package cri

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"cairn/node/runtime"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultSocket is containerd's CRI endpoint on a host that runs it as a
// system service.
const DefaultSocket = "unix:///run/containerd/containerd.sock"

// APIVersion is the CRI version this package speaks.
const APIVersion = "v1"

// Defaults of Config.
const (
	DefaultRequestTimeout = 2 * time.Minute
	DefaultConnectTimeout = 5 * time.Second
	// maxMsgSize is the kubelet's limit: image and container lists of a
	// busy node exceed gRPC's 4 MiB default.
	maxMsgSize = 16 << 20
)

// Config says where containerd listens and how long calls may take.
type Config struct {
	// Socket is containerd's CRI endpoint, unix:///path or a bare path
	// (DefaultSocket when empty).
	Socket string
	// RequestTimeout bounds each call whose context has no deadline
	// (DefaultRequestTimeout), except image pulls, which are bounded by
	// their context only, and ExecSync, which gets its own timeout on top.
	RequestTimeout time.Duration
	// ConnectTimeout bounds New's first call (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// CNIConfDir, when set, is where UpdateRuntimeConfig writes the pod
	// network's CNI configuration for the node's podCIDR (containerd's
	// conf_dir, /etc/cni/net.d by default) before passing the call on.
	CNIConfDir string
	// CNI tunes that configuration; its PodCIDR comes from the call.
	CNI CNIConfig
	// NetNS is the path of the network namespace containerd runs in,
	// where its streaming server (exec, port-forward) listens on
	// loopback; the caller's own when empty.
	NetNS  string
	Logger *slog.Logger
}

// Runtime is a runtime.Runtime backed by containerd.
type Runtime struct {
	cfg     Config
	path    string
	conn    *grpc.ClientConn
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	log     *slog.Logger
	version *runtimeapi.VersionResponse
}

var _ runtime.Runtime = (*Runtime)(nil)

// New connects to containerd and checks that it serves CRI v1. It fails
// with an error a user can act on when containerd is not running.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Socket == "" {
		cfg.Socket = DefaultSocket
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	path, err := socketPath(cfg.Socket)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, notRunning(path, err)
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}
	r := &Runtime{
		cfg: cfg, path: path, conn: conn,
		rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn),
		log: cfg.Logger,
	}
	if err := r.negotiate(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return r, nil
}

// negotiate asks containerd for its CRI version: CRI v1 is the only one
// Kubernetes still speaks, served by containerd 1.6 and later.
func (r *Runtime) negotiate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ConnectTimeout)
	defer cancel()
	// WaitForReady rides out containerd starting up, until the timeout.
	v, err := r.rt.Version(ctx, &runtimeapi.VersionRequest{Version: APIVersion}, grpc.WaitForReady(true))
	switch status.Code(err) {
	case codes.OK:
	case codes.Unimplemented:
		return fmt.Errorf("cri: the runtime at %s does not serve the CRI %s API: use containerd 1.6 or later with its cri plugin enabled (not in disabled_plugins), or --runtime embedded", r.path, APIVersion)
	case codes.Unavailable, codes.DeadlineExceeded:
		return notRunning(r.path, err)
	default:
		return fmt.Errorf("cri: asking %s for its version: %w", r.path, err)
	}
	if v.RuntimeApiVersion != APIVersion {
		return fmt.Errorf("cri: %s %s speaks CRI %q, not %s: upgrade it to containerd 1.6 or later", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion, APIVersion)
	}
	r.version = v
	r.log.Info("connected to the container runtime", "socket", r.path, "runtime", v.RuntimeName, "version", v.RuntimeVersion)
	return nil
}

// notRunning is the error for a socket nobody answers on.
func notRunning(path string, err error) error {
	return fmt.Errorf("cri: containerd is not running at %s (%v); start it or use --runtime embedded", path, err)
}

// socketPath accepts unix:///path, unix:/path and /path.
func socketPath(endpoint string) (string, error) {
	path := endpoint
	if scheme, rest, ok := strings.Cut(endpoint, "://"); ok {
		if scheme != "unix" {
			return "", fmt.Errorf("cri: --cri-socket %q: only unix sockets are supported (unix:///run/containerd/containerd.sock)", endpoint)
		}
		path = rest
	} else if rest, ok := strings.CutPrefix(endpoint, "unix:"); ok {
		path = rest
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("cri: --cri-socket %q is not an absolute socket path", endpoint)
	}
	return path, nil
}

// RuntimeName is the name containerd gave at connection ("containerd").
func (r *Runtime) RuntimeName() string { return r.version.RuntimeName }

// RuntimeVersion is containerd's version, as it gave it at connection.
func (r *Runtime) RuntimeVersion() string { return r.version.RuntimeVersion }

// Close closes the connection to containerd. Pods keep running.
func (r *Runtime) Close() error { return r.conn.Close() }

// callCtx bounds a call by RequestTimeout unless ctx already has a
// deadline.
func (r *Runtime) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, r.cfg.RequestTimeout)
}

// call makes one unary call bounded by callCtx. Errors name the method
// and keep their gRPC status, which status.Code still finds.
func call[Req, Resp any](ctx context.Context, r *Runtime, method string, f func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	ctx, cancel := r.callCtx(ctx)
	defer cancel()
	resp, err := f(ctx, req)
	if err != nil {
		var zero Resp
		return zero, fmt.Errorf("cri: %s: %w", method, err)
	}
	return resp, nil
}
