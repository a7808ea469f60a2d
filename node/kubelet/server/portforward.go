package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/client-go/tools/portforward"
)

// maxPendingPairs bounds the connections of one session waiting for
// their second stream.
const maxPendingPairs = 1024

// portForwardTunnelProtocol is kubectl's port-forward protocol carried in
// a websocket: SPDY frames in binary messages.
const portForwardTunnelProtocol = "SPDY/3.1+" + portforward.PortForwardProtocolV1Name

// portForward forwards connections into a pod, as kubectl port-forward
// asks: over SPDY (portforward.k8s.io), either directly or tunnelled in a
// websocket, which kubectl tries first. Each forwarded connection is a
// pair of streams with the same requestID: data, and error, on which a
// failure to connect is reported.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	ns, pod := r.PathValue("namespace"), r.PathValue("pod")
	sandbox, err := s.cfg.Streams.PodSandbox(r.Context(), ns, pod)
	if err != nil {
		httpError(w, err)
		return
	}
	a := newStreamAcceptor()
	defer close(a.done)
	var conn httpstream.Connection
	if wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		up := gwebsocket.Upgrader{Subprotocols: []string{portForwardTunnelProtocol}}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			s.cfg.Logger.Debug("port-forward: websocket upgrade failed", "pod", ns+"/"+pod, "err", err)
			return
		}
		if ws.Subprotocol() != portForwardTunnelProtocol {
			ws.WriteMessage(gwebsocket.CloseMessage, gwebsocket.FormatCloseMessage(gwebsocket.CloseProtocolError,
				"port-forward needs the "+portForwardTunnelProtocol+" protocol"))
			ws.Close()
			return
		}
		conn, err = spdy.NewServerConnection(portforward.NewTunnelingConnection("kubelet", ws), a.accept)
		if err != nil {
			ws.Close()
			return
		}
	} else {
		if _, err := httpstream.Handshake(r, w, []string{portforward.PortForwardProtocolV1Name}); err != nil {
			return // Handshake answered the client
		}
		if conn = spdy.NewResponseUpgrader().UpgradeResponse(w, r, a.accept); conn == nil {
			return
		}
	}
	defer conn.Close()
	conn.SetIdleTimeout(StreamIdleTimeout)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &forwarder{s: s, conn: conn, sandbox: sandbox, pod: ns + "/" + pod, pairs: map[string]*streamPair{}}
	expire := time.NewTicker(streamCreationTimeout / 6)
	defer expire.Stop()
	for {
		select {
		case <-conn.CloseChan():
			return
		case n := <-a.streams:
			f.add(ctx, n)
		case now := <-expire.C:
			f.expire(now)
		}
	}
}

// streamConn is a data stream as the runtime's connection: closing it
// ends both directions, as the runtime expects of a connection, where a
// stream's own Close only ends our writing.
type streamConn struct{ httpstream.Stream }

// Close half-closes the stream, so the client reads an orderly end after
// the data sent, then resets it, which ends a read still waiting on the
// client.
func (c streamConn) Close() error {
	err := c.Stream.Close()
	c.Stream.Reset()
	return err
}

// streamPair is one forwarded connection's two streams.
type streamPair struct {
	id          string
	data, error httpstream.Stream
	replies     []<-chan struct{}
	created     time.Time
}

// forwarder pairs a port-forward session's streams and forwards each
// complete pair.
type forwarder struct {
	s       *Server
	conn    httpstream.Connection
	sandbox string
	pod     string
	pairs   map[string]*streamPair
}

func (f *forwarder) add(ctx context.Context, n newStream) {
	h := n.stream.Headers()
	id := h.Get(corev1.PortForwardRequestIDHeader)
	p := f.pairs[id]
	if p == nil {
		if len(f.pairs) >= maxPendingPairs {
			f.s.cfg.Logger.Debug("port-forward: too many half-open connections", "pod", f.pod)
			n.stream.Reset()
			f.conn.RemoveStreams(n.stream)
			return
		}
		p = &streamPair{id: id, created: time.Now()}
		f.pairs[id] = p
	}
	switch kind := h.Get(corev1.StreamType); {
	case kind == corev1.StreamTypeData && p.data == nil:
		p.data = n.stream
	case kind == corev1.StreamTypeError && p.error == nil:
		p.error = n.stream
	default:
		f.s.cfg.Logger.Debug("port-forward: unexpected stream", "pod", f.pod, "type", kind, "requestID", id)
		n.stream.Reset()
		f.conn.RemoveStreams(n.stream)
		return
	}
	p.replies = append(p.replies, n.replySent)
	if p.data != nil && p.error != nil {
		delete(f.pairs, id)
		go f.forward(ctx, p)
	}
}

// expire drops the pairs whose other stream never came.
func (f *forwarder) expire(now time.Time) {
	for id, p := range f.pairs {
		if now.Sub(p.created) < streamCreationTimeout {
			continue
		}
		delete(f.pairs, id)
		for _, st := range []httpstream.Stream{p.data, p.error} {
			if st != nil {
				st.Reset()
				f.conn.RemoveStreams(st)
			}
		}
	}
}

// forward connects a pair's data stream to the pod's port; a failure
// goes to the error stream as a message kubectl prints.
func (f *forwarder) forward(ctx context.Context, p *streamPair) {
	defer f.conn.RemoveStreams(p.data, p.error)
	for _, r := range p.replies {
		<-r
	}
	portText := p.data.Headers().Get(corev1.PortHeader)
	port, err := strconv.ParseUint(portText, 10, 16)
	if err == nil && port == 0 {
		err = fmt.Errorf("port %d is out of range", port)
	}
	if err == nil {
		err = f.s.cfg.Streams.PortForward(ctx, f.sandbox, int32(port), streamConn{p.data})
	} else {
		p.data.Reset()
		err = fmt.Errorf("invalid port %q: %v", portText, err)
	}
	if err != nil {
		msg := fmt.Sprintf("error forwarding port %s to pod %s: %v", portText, f.pod, err)
		f.s.cfg.Logger.Debug("port-forward failed", "pod", f.pod, "err", err)
		p.error.Write([]byte(msg))
	}
	p.error.Close()
}
