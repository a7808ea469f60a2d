package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"cairn/node/runtime"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/klog/v2"
)

// StreamIdleTimeout ends an exec or port-forward session that carried
// nothing for this long, as the kubelet's streaming-connection-idle-timeout
// does by default.
const StreamIdleTimeout = 4 * time.Hour

// Streams finds what exec, attach and portForward reach and runs them.
type Streams interface {
	// RunningContainer returns the runtime ID of a running container of
	// a pod of this node. Its errors may carry an HTTP status as Logs'
	// do.
	RunningContainer(ctx context.Context, namespace, pod, container string) (string, error)
	// PodSandbox returns the runtime ID of a pod's ready sandbox.
	PodSandbox(ctx context.Context, namespace, pod string) (string, error)
	runtime.Streamer
}

// Exec channels of the channel.k8s.io websocket protocols, in order.
const (
	chanStdin = iota
	chanStdout
	chanStderr
	chanError
	chanResize
	execChannels
)

// execOptions are PodExecOptions as the API server passes them on.
type execOptions struct {
	command                    []string
	stdin, stdout, stderr, tty bool
}

// parseExecOptions reads and checks the query as the kubelet does; an
// attach has no command.
func parseExecOptions(r *http.Request, attach bool) (execOptions, error) {
	q := r.URL.Query()
	o := execOptions{command: q["command"]}
	for _, f := range []struct {
		key string
		to  *bool
	}{{"stdin", &o.stdin}, {"stdout", &o.stdout}, {"stderr", &o.stderr}, {"tty", &o.tty}} {
		v := q.Get(f.key)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("invalid %s %q", f.key, v)
		}
		*f.to = b
	}
	if len(o.command) == 0 && !attach {
		return o, errors.New("you must specify at least one command for the container")
	}
	// A terminal merges stderr into stdout; kubectl asks for no stderr
	// with a tty, other clients may.
	if o.tty {
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errors.New("you must specify at least one of stdin, stdout, stderr")
	}
	return o, nil
}

// exec runs a command in a container and streams its stdin, stdout and
// stderr, as kubectl exec asks: over a websocket with the
// v5.channel.k8s.io or v4.channel.k8s.io protocol (kubectl since 1.30),
// or over SPDY with v4.channel.k8s.io (older clients, and programs that
// use client-go's SPDY executor).
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	s.remoteCommand(w, r, false)
}

// attach connects to a container's own process as kubectl attach and
// kubectl run -it ask, over the same protocols as exec.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	s.remoteCommand(w, r, true)
}

// remoteCommand serves exec, or attach: the upgrade, the streams, and
// the final status.
func (s *Server) remoteCommand(w http.ResponseWriter, r *http.Request, attach bool) {
	opts, err := parseExecOptions(r, attach)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	id, err := s.cfg.Streams.RunningContainer(r.Context(), ns, pod, container)
	if err != nil {
		httpError(w, err)
		return
	}
	// The websocket layer logs the connection's ordinary end, closed by
	// this side, as an error: keep that out of the agent's log.
	r = r.WithContext(klog.NewContext(r.Context(), logr.Discard()))
	var session *execSession
	if wsstream.IsWebSocketRequest(r) {
		session, err = openWebsocketExec(w, r, opts)
	} else {
		session, err = openSPDYExec(w, r, opts)
	}
	if err != nil {
		s.cfg.Logger.Debug("exec: upgrade failed", "pod", ns+"/"+pod, "err", err)
		return
	}
	defer session.close()

	// The request's context outlives the upgraded connection: end the
	// command's session when the client goes away, as a hangup would.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-session.gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	var resize <-chan runtime.TerminalSize
	if session.resize != nil {
		resize = resizes(ctx, session.resize)
	}
	var code int
	if attach {
		err = s.cfg.Streams.Attach(ctx, runtime.AttachRequest{ContainerID: id, TTY: opts.tty,
			Stdin: session.stdin, Stdout: session.stdout, Stderr: session.stderr, Resize: resize})
	} else {
		code, err = s.cfg.Streams.Exec(ctx, runtime.ExecRequest{ContainerID: id, Cmd: opts.command, TTY: opts.tty,
			Stdin: session.stdin, Stdout: session.stdout, Stderr: session.stderr, Resize: resize})
	}
	status := execStatus(code, err)
	if status.Status != metav1.StatusSuccess {
		s.cfg.Logger.Debug("exec ended", "pod", ns+"/"+pod, "container", container, "attach", attach, "message", status.Message)
	}
	b, _ := json.Marshal(status)
	session.status.Write(b)
}

// execSession is an upgraded exec request's streams; the ones not asked
// for are nil.
type execSession struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	resize         io.Reader
	// gone is closed when the client's connection ends.
	gone   <-chan struct{}
	status io.Writer
	close  func()
}

// openWebsocketExec upgrades to a websocket with one binary channel each
// for stdin, stdout, stderr, the final status and terminal resizes.
func openWebsocketExec(w http.ResponseWriter, r *http.Request, opts execOptions) (*execSession, error) {
	kind := func(want bool, t wsstream.ChannelType) wsstream.ChannelType {
		if want {
			return t
		}
		return wsstream.IgnoreChannel
	}
	channels := make([]wsstream.ChannelType, execChannels)
	channels[chanStdin] = kind(opts.stdin, wsstream.ReadChannel)
	channels[chanStdout] = kind(opts.stdout, wsstream.WriteChannel)
	channels[chanStderr] = kind(opts.stderr, wsstream.WriteChannel)
	channels[chanError] = wsstream.WriteChannel
	// Read even without a terminal: the channel's end is how the end of
	// the connection shows (clients never close it themselves).
	channels[chanResize] = wsstream.ReadChannel
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		remotecommand.StreamProtocolV5Name: {Binary: true, Channels: channels},
		remotecommand.StreamProtocolV4Name: {Binary: true, Channels: channels},
	})
	conn.SetIdleTimeout(StreamIdleTimeout)
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return nil, err
	}
	s := &execSession{status: streams[chanError], close: func() { conn.Close() }}
	if opts.stdin {
		s.stdin = streams[chanStdin]
	}
	if opts.stdout {
		s.stdout = streams[chanStdout]
	}
	if opts.stderr {
		s.stderr = streams[chanStderr]
	}
	// The resize channel ends with the connection: sizes, if any, go on
	// through a pipe to the session, and the end closes gone.
	gone := make(chan struct{})
	s.gone = gone
	var sizes *io.PipeWriter
	if opts.tty {
		var r *io.PipeReader
		r, sizes = io.Pipe()
		s.resize = r
	}
	go func() {
		defer close(gone)
		if sizes == nil {
			io.Copy(io.Discard, streams[chanResize])
			return
		}
		io.Copy(sizes, streams[chanResize])
		sizes.Close()
	}()
	return s, nil
}

// maxResizeMessage bounds one terminal size message: a client cannot
// make the decoder buffer more than this.
const maxResizeMessage = 4096

// resizes decodes the terminal sizes the client sends, a JSON object
// each, until the channel or ctx ends. A malformed or oversized message
// ends the resizes, not the session.
func resizes(ctx context.Context, ch io.Reader) <-chan runtime.TerminalSize {
	out := make(chan runtime.TerminalSize)
	go func() {
		defer close(out)
		limited := &io.LimitedReader{R: ch, N: maxResizeMessage}
		dec := json.NewDecoder(limited)
		for {
			var size struct{ Width, Height uint16 }
			if err := dec.Decode(&size); err != nil {
				// Keep reading to the end: the channel's end is the
				// connection's (see openWebsocketExec).
				io.Copy(io.Discard, ch)
				return
			}
			limited.N = maxResizeMessage
			select {
			case out <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
			case <-ctx.Done():
				io.Copy(io.Discard, ch)
				return
			}
		}
	}()
	return out
}

// execStatus is the status sent on the error channel: success, a
// non-zero exit code as the cause clients turn into their own exit code,
// or why the command could not run.
func execStatus(code int, err error) metav1.Status {
	switch {
	case err != nil:
		return metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError,
			Code: http.StatusInternalServerError, Message: err.Error()}
	case code != 0:
		return metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: exit status %d", code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
				Type:    remotecommand.ExitCodeCauseType,
				Message: strconv.Itoa(code),
			}}},
		}
	}
	return metav1.Status{Status: metav1.StatusSuccess}
}

// httpError answers err with the HTTP status it carries, 500 otherwise.
func httpError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) {
		status = hs.HTTPStatus()
	}
	http.Error(w, err.Error(), status)
}
