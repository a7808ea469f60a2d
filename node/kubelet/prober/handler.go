// Package prober runs liveness, readiness and startup probes, and the
// exec and httpGet actions that lifecycle hooks share with them.
package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UserAgent is what HTTP probes and hooks send, as kubelet 1.37 does.
const UserAgent = "kube-probe/1.37"

// maxBody bounds what is read of a probed HTTP answer, for the message.
const maxBody = 10 << 10

// maxRedirects is how many same-host redirects an HTTP probe follows.
const maxRedirects = 10

// Execer runs a command in a container; the runtime is one.
type Execer interface {
	ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error)
}

// Result is the outcome of a probe.
type Result int

// Probe outcomes.
const (
	Unknown Result = iota
	Success
	Failure
)

// String names the result as events and logs show it.
func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}

// Target is the container an action runs against.
type Target struct {
	Pod         *corev1.Pod
	Container   *corev1.Container
	ContainerID string
	// PodIP is where HTTP and TCP actions connect when they name no host.
	PodIP string
}

// Runner runs probe and hook actions.
type Runner struct {
	Exec Execer
	// Dial connects TCP, HTTP and gRPC actions; a plain net.Dialer's
	// when nil. The agent passes one that dials from inside the node's
	// network namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Probe runs one attempt of h within timeout and returns its outcome
// and a message saying why it failed.
func (r *Runner) Probe(ctx context.Context, h corev1.ProbeHandler, timeout time.Duration, t Target) (Result, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		return r.exec(ctx, h.Exec.Command, timeout, t)
	case h.HTTPGet != nil:
		return r.httpGet(ctx, h.HTTPGet, t, true)
	case h.TCPSocket != nil:
		return r.tcp(ctx, h.TCPSocket, t)
	case h.GRPC != nil:
		return r.grpc(ctx, h.GRPC, t)
	}
	return Unknown, "probe has no action"
}

// Hook runs a lifecycle handler within timeout. An exec hook fails on a
// non-zero exit; an httpGet hook only when the request cannot be made,
// as in Kubernetes, where the status code of a hook is not checked.
func (r *Runner) Hook(ctx context.Context, h *corev1.LifecycleHandler, timeout time.Duration, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		if res, msg := r.exec(ctx, h.Exec.Command, timeout, t); res != Success {
			return errors.New(msg)
		}
	case h.HTTPGet != nil:
		if res, msg := r.httpGet(ctx, h.HTTPGet, t, false); res != Success {
			return errors.New(msg)
		}
	case h.TCPSocket != nil:
		// Deprecated and, as in Kubernetes, a no-op.
	case h.Sleep != nil:
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
	}
	return nil
}

func (r *Runner) exec(ctx context.Context, cmd []string, timeout time.Duration, t Target) (Result, string) {
	if r.Exec == nil {
		return Failure, "no runtime to exec in"
	}
	resp, err := r.Exec.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: t.ContainerID, Cmd: cmd, Timeout: int64((timeout + time.Second - 1) / time.Second)})
	if err != nil {
		if ctx.Err() != nil {
			return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " "))
		}
		return Failure, err.Error()
	}
	out := strings.TrimSpace(string(resp.Stdout) + string(resp.Stderr))
	if resp.ExitCode != 0 {
		if out == "" {
			return Failure, fmt.Sprintf("command %q exited with %d", strings.Join(cmd, " "), resp.ExitCode)
		}
		return Failure, out
	}
	return Success, out
}

func (r *Runner) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if r.Dial != nil {
		return r.Dial(ctx, network, addr)
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

func (r *Runner) tcp(ctx context.Context, a *corev1.TCPSocketAction, t Target) (Result, string) {
	port, err := ResolvePort(a.Port, t.Container)
	if err != nil {
		return Failure, err.Error()
	}
	host := a.Host
	if host == "" {
		host = t.PodIP
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := r.dial(ctx, "tcp", addr)
	if err != nil {
		return Failure, fmt.Sprintf("dial tcp %s: %v", addr, unwrapOp(err))
	}
	conn.Close()
	return Success, ""
}

// httpGet probes a URL. For probes, a status from 200 to 399 is a
// success; hooks (checkStatus false) only need an answer.
func (r *Runner) httpGet(ctx context.Context, a *corev1.HTTPGetAction, t Target, checkStatus bool) (Result, string) {
	port, err := ResolvePort(a.Port, t.Container)
	if err != nil {
		return Failure, err.Error()
	}
	host := a.Host
	if host == "" {
		host = t.PodIP
	}
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := a.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path))
	if err != nil {
		return Failure, err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Failure, err.Error()
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range a.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	transport := &http.Transport{
		DialContext: r.dial,
		// Probed servers present whatever certificate they have.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
		DisableKeepAlives: true,
	}
	defer transport.CloseIdleConnections()
	var offHost bool
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			// Redirects are followed on the same host only; one that
			// leaves it ends the probe as a success, as in Kubernetes.
			if next.URL.Hostname() != via[0].URL.Hostname() {
				offHost = true
				return http.ErrUseLastResponse
			}
			if len(via) >= maxRedirects {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Failure, fmt.Sprintf("Get %q: context deadline exceeded (Client.Timeout exceeded while awaiting headers)", u.String())
		}
		return Failure, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if !checkStatus {
		return Success, ""
	}
	if offHost {
		return Success, "Probe terminated redirects"
	}
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		return Success, ""
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d%s", resp.StatusCode, bodySuffix(body))
}

func bodySuffix(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	return ": " + s
}

// ResolvePort turns a probe's port, a number or a container port name,
// into a number.
func ResolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("couldn't find port %q in the container's ports", p.StrVal)
}

// unwrapOp drops the repetition of net.OpError's op and address.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
