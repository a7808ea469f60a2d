package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/internal/testimage"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
)

// streamPort is where the streams test pod answers "pong LINE" to a line.
const streamPort = 9000

// checkStreams runs kubectl's exec and port-forward, through the API
// server and the kubelet API, into a pod of n: the way kubectl does
// (websocket first, SPDY if the upgrade fails), and each transport
// alone. hangupKills says the runtime ends a command whose client went
// away (the embedded one does; containerd, as under Kubernetes, lets it
// run on).
func checkStreams(t *testing.T, n *testNode, hangupKills bool) {
	ctx := context.Background()
	n.create(t, n.pod("streams", corev1.Container{Name: "main", Image: testimage.BusyboxRef,
		Command: sh(fmt.Sprintf(`nc -ll -p %d -e sh -c 'read l; echo "pong $l"' & exec sleep 3600`, streamPort))}))
	n.waitPod(t, "streams", 60*time.Second, "running", running)
	cfg := n.cluster.AdminConfig(0)

	executors := map[string]func(t *testing.T, cmd []string, tty bool) remotecommand.Executor{
		"kubectl": func(t *testing.T, cmd []string, tty bool) remotecommand.Executor {
			return kubectlExecutor(t, cfg, execURL(n, cmd, tty))
		},
		"spdy": func(t *testing.T, cmd []string, tty bool) remotecommand.Executor {
			e, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, execURL(n, cmd, tty))
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
	}
	for name, executor := range executors {
		t.Run("exec/"+name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := executor(t, []string{"cat"}, false).StreamWithContext(ctx, remotecommand.StreamOptions{
				Stdin: strings.NewReader("hello\nworld\n"), Stdout: &out, Stderr: &errOut})
			// Both carry the end of stdin (websockets since v5): cat exits.
			if err != nil || out.String() != "hello\nworld\n" {
				t.Errorf("cat: %q, %v", out.String(), err)
			}
			out.Reset()
			err = executor(t, sh("echo out; echo err >&2; exit 3"), false).StreamWithContext(ctx, remotecommand.StreamOptions{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
			var exit exec.CodeExitError
			if !errors.As(err, &exit) || exit.Code != 3 || out.String() != "out\n" || errOut.String() != "err\n" {
				t.Errorf("exit 3: err %v, stdout %q, stderr %q", err, out.String(), errOut.String())
			}
			out.Reset()
			// kubectl exec -t: a terminal of the client's size.
			err = executor(t, sh(`test -t 0 && test -t 1 || exit 1
				for i in 1 2 3 4 5 6 7 8 9 10; do s=$(stty size 2>/dev/null); [ "$s" = "40 100" ] && break; sleep 0.2; done; echo $s`), true).StreamWithContext(ctx, remotecommand.StreamOptions{
				Stdout: &out, Tty: true, TerminalSizeQueue: newOneSize(100, 40)})
			if err != nil || strings.TrimSpace(out.String()) != "40 100" {
				t.Errorf("tty: %q, %v", out.String(), err)
			}
		})
	}

	// A client that goes away ends its command, as a hangup would.
	hangup := func(t *testing.T) {
		e, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, execURL(n, sh("echo started; exec sleep 1001"), false).String())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctx)
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: &blockingReader{ctx: ctx}, Stdout: out, Stderr: io.Discard})
		}()
		eventually(t, 10*time.Second, "the command started", func() bool { return strings.Contains(out.String(), "started") },
			func() any { return out.String() })
		cancel()
		<-done
		var ps string
		eventually(t, 10*time.Second, "the command ended with its client", func() bool {
			var b bytes.Buffer
			e, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, execURL(n, []string{"ps"}, false).String())
			if err != nil {
				t.Fatal(err)
			}
			e.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: &b, Stderr: io.Discard})
			ps = b.String()
			return strings.Contains(ps, "sleep 3600") && !strings.Contains(ps, "sleep 1001")
		}, func() any { return ps })
	}
	if hangupKills {
		t.Run("exec/hangup", hangup)
	}

	t.Run("exec/refused", func(t *testing.T) {
		u := execURL(n, []string{"true"}, false)
		q := u.Query()
		q.Set("container", "nope")
		u.RawQuery = q.Encode()
		e, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
		if err != nil {
			t.Fatal(err)
		}
		err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "container nope is not valid for pod streams") {
			t.Errorf("exec in a missing container: %v", err)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		u := n.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("streams").SubResource("portforward").URL()
		transport, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		tunnel, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
		if err != nil {
			t.Fatal(err)
		}
		dialers := map[string]httpstream.Dialer{
			"kubectl": portforward.NewFallbackDialer(tunnel, spdyDialer, func(err error) bool {
				return fellBack(t, err)
			}),
			"spdy": spdyDialer,
		}
		for name, dialer := range dialers {
			t.Run(name, func(t *testing.T) {
				stop, ready := make(chan struct{}), make(chan struct{})
				fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"},
					[]string{fmt.Sprintf("0:%d", streamPort), "0:9999"}, stop, ready, io.Discard, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- fw.ForwardPorts() }()
				defer func() {
					close(stop)
					<-done
				}()
				select {
				case <-ready:
				case err := <-done:
					t.Fatalf("port-forward: %v", err)
				}
				ports, err := fw.GetPorts()
				if err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					line := pong(t, ports[0].Local, fmt.Sprintf("ping %d", i))
					if line != fmt.Sprintf("pong ping %d", i) {
						t.Errorf("connection %d answered %q", i, line)
					}
				}
				// Nothing listens on 9999 in the pod: the connection ends
				// (kubectl logs why).
				if answer := pong(t, ports[1].Local, "anyone?"); answer != "" {
					t.Errorf("port 9999 answered %q", answer)
				}
			})
		}
	})
	n.delete(t, "streams", 0)
}

// checkAttach runs kubectl run -it's attach, through the API server and
// the kubelet API, to a pod of n whose shell has a terminal: typed
// commands run and their output comes back, and the shell's exit ends
// the session.
func checkAttach(t *testing.T, n *testNode) {
	p := n.pod("console", corev1.Container{Name: "sh", Image: testimage.BusyboxRef, Command: []string{"sh"}, Stdin: true, StdinOnce: true, TTY: true})
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	n.create(t, p)
	n.waitPod(t, "console", 60*time.Second, "running", running)
	s := attachTTY(t, n, "console", "sh")
	s.until("the attached shell answers", "echo hello-$((6*7))", "hello-42")
	s.exit("exit 3")
	got := n.waitPod(t, "console", 30*time.Second, "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if st := got.Status.ContainerStatuses[0].State.Terminated; st == nil || st.ExitCode != 3 {
		t.Errorf("the shell's state %+v, want exit code 3", got.Status.ContainerStatuses[0].State)
	}
	n.delete(t, "console", 0)
}

// ttySession is a shell attached on a terminal through pods/attach, as
// `kubectl attach -it` and `kubectl debug -it` attach.
type ttySession struct {
	t      *testing.T
	typing *io.PipeWriter
	out    *syncBuffer
	done   chan error
}

// attachTTY attaches to the shell of container in pod, a pod of n.
func attachTTY(t *testing.T, n *testNode, pod, container string) *ttySession {
	t.Helper()
	u := n.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec).URL()
	e := kubectlExecutor(t, n.cluster.AdminConfig(0), u)
	stdin, typing := io.Pipe()
	s := &ttySession{t: t, typing: typing, out: &syncBuffer{}, done: make(chan error, 1)}
	t.Cleanup(func() { typing.Close() })
	go func() {
		s.done <- e.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: stdin, Stdout: s.out, Tty: true})
	}()
	return s
}

// until types line until the output holds want: the shell may not have
// printed its prompt yet.
func (s *ttySession) until(what, line, want string) {
	s.t.Helper()
	eventually(s.t, 20*time.Second, what, func() bool {
		fmt.Fprintln(s.typing, line)
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(s.out.String(), want)
	}, func() any { return s.out.String() })
}

// exit types line, which ends the shell, and waits for the session to
// end with it.
func (s *ttySession) exit(line string) {
	s.t.Helper()
	fmt.Fprintln(s.typing, line)
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("the session ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		s.t.Fatalf("the session did not end with the shell; output %q", s.out.String())
	}
}

// blockingReader is a stdin nobody types in, until ctx ends.
type blockingReader struct{ ctx context.Context }

func (b *blockingReader) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, io.EOF
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kubectlExecutor runs a remote command at u as kubectl does: over a
// websocket, or over SPDY if the upgrade fails (which must not happen
// here).
func kubectlExecutor(t *testing.T, cfg *rest.Config, u *url.URL) remotecommand.Executor {
	t.Helper()
	ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	e, err := remotecommand.NewFallbackExecutor(ws, sp, func(err error) bool { return fellBack(t, err) })
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fellBack is kubectl's test for falling back to SPDY, which must not
// happen here.
func fellBack(t *testing.T, err error) bool {
	if httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err) {
		t.Errorf("kubectl fell back to SPDY: %v", err)
		return true
	}
	return false
}

// execURL is pods/streams/exec with cmd, as kubectl builds it: kubectl
// exec -i, or -t without -i.
func execURL(n *testNode, cmd []string, tty bool) *url.URL {
	req := n.client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("streams").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: cmd, Stdin: !tty, Stdout: true, Stderr: !tty, TTY: tty}, scheme.ParameterCodec)
	return req.URL()
}

// pong sends line to a forwarded local port and returns the answer line
// ("" if the connection ends first), checking that the connection then
// ends.
func pong(t *testing.T, local uint16, line string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(c, line)
	r := bufio.NewReader(c)
	answer, _ := r.ReadString('\n')
	// The pod's side closes after its answer: so does the forwarded
	// connection, while the client still holds its own end open.
	if rest, err := r.ReadString('\n'); err != io.EOF {
		t.Errorf("after the answer to %q: %q, %v; want the connection closed", line, rest, err)
	}
	return strings.TrimSpace(answer)
}

// oneSize is a terminal that reports one size.
type oneSize struct {
	sizes chan remotecommand.TerminalSize
}

func newOneSize(width, height uint16) *oneSize {
	s := &oneSize{sizes: make(chan remotecommand.TerminalSize, 1)}
	s.sizes <- remotecommand.TerminalSize{Width: width, Height: height}
	close(s.sizes)
	return s
}

// Next returns the size, then nil: no more resizes.
func (s *oneSize) Next() *remotecommand.TerminalSize {
	size, ok := <-s.sizes
	if !ok {
		return nil
	}
	return &size
}
