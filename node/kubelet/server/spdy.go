package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/remotecommand"
)

// streamCreationTimeout bounds the wait for the streams a client opens
// after an SPDY upgrade, as the kubelet's does.
const streamCreationTimeout = 30 * time.Second

// newStream is a stream a client opened and the signal that the server's
// reply to it went out, after which it may carry data.
type newStream struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

// streamAcceptor hands the streams a connection receives to one reader
// until done is closed, then refuses them.
type streamAcceptor struct {
	streams chan newStream
	done    chan struct{}
}

func newStreamAcceptor() *streamAcceptor {
	return &streamAcceptor{streams: make(chan newStream), done: make(chan struct{})}
}

// accept is an httpstream.NewStreamHandler.
func (a *streamAcceptor) accept(s httpstream.Stream, replySent <-chan struct{}) error {
	select {
	case a.streams <- newStream{s, replySent}:
		return nil
	case <-a.done:
		return errors.New("server: the session no longer takes streams")
	}
}

// openSPDYExec upgrades to SPDY with the v4.channel.k8s.io protocol and
// waits for the client's streams: error, and stdin, stdout, stderr and
// resize as asked for.
func openSPDYExec(w http.ResponseWriter, r *http.Request, opts execOptions) (*execSession, error) {
	if _, err := httpstream.Handshake(r, w, []string{remotecommand.StreamProtocolV4Name}); err != nil {
		return nil, err // Handshake answered the client
	}
	a := newStreamAcceptor()
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, a.accept)
	if conn == nil {
		close(a.done)
		return nil, errors.New("server: SPDY upgrade failed")
	}
	conn.SetIdleTimeout(StreamIdleTimeout)
	fail := func(err error) (*execSession, error) {
		close(a.done)
		conn.Close()
		return nil, err
	}
	want := map[string]bool{corev1.StreamTypeError: true, corev1.StreamTypeStdin: opts.stdin,
		corev1.StreamTypeStdout: opts.stdout, corev1.StreamTypeStderr: opts.stderr, corev1.StreamTypeResize: opts.tty}
	got := map[string]httpstream.Stream{}
	var replies []<-chan struct{}
	timeout := time.NewTimer(streamCreationTimeout)
	defer timeout.Stop()
	for needed := countTrue(want); len(got) < needed; {
		select {
		case ns := <-a.streams:
			kind := ns.stream.Headers().Get(corev1.StreamType)
			if !want[kind] || got[kind] != nil {
				ns.stream.Reset()
				return fail(fmt.Errorf("server: unexpected %q stream", kind))
			}
			got[kind] = ns.stream
			replies = append(replies, ns.replySent)
		case <-timeout.C:
			return fail(fmt.Errorf("server: timed out waiting for the client's streams (%d of %d)", len(got), needed))
		case <-conn.CloseChan():
			return fail(errors.New("server: the client closed the connection before opening its streams"))
		}
	}
	close(a.done)
	for _, r := range replies {
		<-r
	}
	gone := make(chan struct{})
	go func() {
		<-conn.CloseChan()
		close(gone)
	}()
	status := got[corev1.StreamTypeError]
	s := &execSession{status: status, gone: gone, close: func() {
		status.Close()
		conn.Close()
	}}
	if st := got[corev1.StreamTypeStdin]; st != nil {
		s.stdin = st
	}
	if st := got[corev1.StreamTypeStdout]; st != nil {
		s.stdout = st
	}
	if st := got[corev1.StreamTypeStderr]; st != nil {
		s.stderr = st
	}
	if st := got[corev1.StreamTypeResize]; st != nil {
		s.resize = st
	}
	return s, nil
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
