package helper

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the shim's attach server.
const (
	// attachQueue is how many output frames may wait for one client
	// (each at most a pipe or terminal read, some kilobytes); a client
	// further behind for attachGrace is dropped.
	attachQueue = 256
	// attachGrace is how long the output of the container waits for a
	// client whose queue is full before dropping it: a client whose
	// writer was starved of CPU for a moment catches up, and a stuck
	// one costs the container this pause once.
	attachGrace = 250 * time.Millisecond
	// attachHandshake bounds the wait for a client's header.
	attachHandshake = 10 * time.Second
	// attachFlush bounds the wait, after the container exited, for the
	// clients to take their last output and the exit frame.
	attachFlush = 2 * time.Second
	// maxAttachHeader bounds the header line.
	maxAttachHeader = 4096
)

// EOT is ^D, which a terminal in canonical mode turns into an end of
// file for the process reading it.
const EOT = 0x04

// attachHub is the shim's side of the attach protocol (see
// AttachSocket): it serves the socket, copies the container's output to
// the attached clients and their input to its stdin.
type attachHub struct {
	sp   *Spec
	ln   *net.UnixListener
	path string
	// reopenLog reopens the container's log file (AttachHeader.ReopenLog).
	reopenLog func() error

	// in is where input goes: the write end of the container's stdin
	// pipe, or the terminal's master; nil without stdin. term is the
	// master, with a tty.
	in, term *os.File
	// inMu orders writes into in, and the ^D of a closed tty stdin after
	// them.
	inMu sync.Mutex
	// inClosed is set once the stdin closed for good (StdinOnce).
	inClosed atomic.Bool

	// attached counts the clients: broadcast does nothing without any,
	// which keeps the log copy of unattached containers as it was.
	attached atomic.Int32
	mu       sync.Mutex
	clients  map[*attachClient]struct{}
	exited   bool
	// writers counts the clients' writer goroutines, for the last flush.
	writers sync.WaitGroup
}

// attachClient is one attached connection.
type attachClient struct {
	conn net.Conn
	h    AttachHeader
	// out queues the frames to send; closing it ends the writer, which
	// then closes conn.
	out chan []byte
}

// wants says whether the client asked for frames of kind.
func (c *attachClient) wants(kind FrameKind) bool {
	switch kind {
	case FrameStdout:
		return c.h.Stdout
	case FrameStderr:
		return c.h.Stderr
	}
	return true
}

// listenAttach creates the container's attach socket; the hub that
// serves it is made once the container's stdio exists.
func listenAttach(dir string) (*net.UnixListener, error) {
	return listenInDir(dir, AttachSocket)
}

// newAttachHub serves ln for a container created with sp, whose stdio
// the shim holds as cio.
func newAttachHub(dir string, sp *Spec, ln *net.UnixListener, cio *containerIO, reopenLog func() error) *attachHub {
	h := &attachHub{
		sp: sp, ln: ln, path: filepath.Join(dir, AttachSocket), reopenLog: reopenLog,
		in: cio.stdin, term: cio.term,
		clients: map[*attachClient]struct{}{},
	}
	go h.serve()
	return h
}

func (h *attachHub) serve() {
	for {
		conn, err := h.ln.Accept()
		if err != nil {
			return
		}
		go h.handshake(conn)
	}
}

// handshake reads a client's header and, if the container can take it,
// adds the client.
func (h *attachHub) handshake(conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(attachHandshake))
	r := bufio.NewReaderSize(conn, maxAttachHeader)
	line, err := r.ReadSlice('\n')
	var hdr AttachHeader
	if err == nil {
		err = json.Unmarshal(line, &hdr)
	}
	if err != nil {
		refuse(conn, errors.New("helper: malformed attach header"))
		return
	}
	if hdr.ReopenLog {
		if err := h.reopenLog(); err != nil {
			refuse(conn, err)
			return
		}
		conn.SetWriteDeadline(time.Now().Add(attachHandshake))
		conn.Write([]byte("{}\n"))
		conn.Close()
		return
	}
	if err := CheckAttach(h.sp, hdr); err != nil {
		refuse(conn, err)
		return
	}
	conn.SetReadDeadline(time.Time{})
	c := &attachClient{conn: conn, h: hdr, out: make(chan []byte, attachQueue)}
	c.out <- []byte("{}\n")
	h.mu.Lock()
	if h.exited {
		h.mu.Unlock()
		refuse(conn, errors.New("the container has exited"))
		return
	}
	h.clients[c] = struct{}{}
	h.attached.Add(1)
	h.writers.Add(1)
	h.mu.Unlock()
	go h.write(c)
	h.read(c, r)
}

func refuse(conn net.Conn, err error) {
	raw, _ := json.Marshal(attachReply{Error: err.Error()})
	conn.SetWriteDeadline(time.Now().Add(attachHandshake))
	conn.Write(append(raw, '\n'))
	conn.Close()
}

// write sends the client's queued frames until the queue closes, then
// closes the connection.
func (h *attachHub) write(c *attachClient) {
	defer h.writers.Done()
	defer c.conn.Close()
	failed := false
	for frame := range c.out {
		if failed {
			continue
		}
		if _, err := c.conn.Write(frame); err != nil {
			failed = true
			h.drop(c)
		}
	}
}

// read takes the client's frames until it goes away.
func (h *attachHub) read(c *attachClient, r io.Reader) {
	stdinOpen := c.h.Stdin
	var buf []byte
	for {
		kind, data, err := ReadFrame(r, buf)
		if err != nil {
			break
		}
		buf = data[:0]
		switch kind {
		case FrameStdin:
			if stdinOpen {
				h.input(data)
			}
		case FrameStdinClose:
			if stdinOpen {
				stdinOpen = false
				h.inputEnded()
			}
		case FrameResize:
			var size ResizeData
			if h.term != nil && json.Unmarshal(data, &size) == nil {
				SetWinsize(h.term, size.Width, size.Height)
			}
		}
		// Other kinds are for newer shims: ignored.
	}
	// A client gone without closing its input ended it all the same.
	if stdinOpen {
		h.inputEnded()
	}
	h.drop(c)
}

// input writes a client's input into the container's stdin. A process
// that does not read it holds up the client that sent it, not the
// container. Errors mean the process closed its stdin or exited.
func (h *attachHub) input(p []byte) {
	if h.in == nil || h.inClosed.Load() {
		return
	}
	h.inMu.Lock()
	defer h.inMu.Unlock()
	if !h.inClosed.Load() {
		h.in.Write(p)
	}
}

// inputEnded is the end of an attached client's input: with StdinOnce,
// it closes the container's stdin for good. A pipe is closed; a
// terminal, which cannot be closed without hanging up the process, gets
// ^D, which a shell or cat in canonical mode takes as end of file at the
// start of a line.
func (h *attachHub) inputEnded() {
	if h.in == nil || !h.sp.StdinOnce || !h.inClosed.CompareAndSwap(false, true) {
		return
	}
	if h.term == nil {
		h.in.Close()
		return
	}
	h.inMu.Lock()
	defer h.inMu.Unlock()
	h.in.Write([]byte{EOT})
}

// broadcast queues output of the container, of kind FrameStdout or
// FrameStderr, to the clients that asked for it. It blocks at most
// attachGrace per client: one whose queue stays full is dropped.
func (h *attachHub) broadcast(kind FrameKind, p []byte) {
	if h == nil || h.attached.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var frame []byte
	for c := range h.clients {
		if !c.wants(kind) {
			continue
		}
		if frame == nil {
			frame = AppendFrame(make([]byte, 0, frameHeader+len(p)), kind, p)
		}
		select {
		case c.out <- frame:
		default:
			grace := time.NewTimer(attachGrace)
			select {
			case c.out <- frame:
			case <-grace.C:
				h.unsafeDrop(c)
			}
			grace.Stop()
		}
	}
}

// drop disconnects a client at once, dropping the output it has not
// taken.
func (h *attachHub) drop(c *attachClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unsafeDrop(c)
}

func (h *attachHub) unsafeDrop(c *attachClient) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	h.attached.Add(-1)
	close(c.out)
	// Wakes the writer if it is stuck on a client that reads nothing.
	c.conn.Close()
}

// shutdown, once the container exited and its output was copied, stops
// taking clients, sends each its last output and the exit frame, and
// waits (for attachFlush at most) until they have them.
func (h *attachHub) shutdown(code int) {
	if h == nil {
		return
	}
	h.ln.Close()
	os.Remove(h.path)
	h.inClosed.Store(true)
	raw, _ := json.Marshal(ExitData{ExitCode: int32(code)})
	exit := AppendFrame(nil, FrameExit, raw)
	h.mu.Lock()
	h.exited = true
	for c := range h.clients {
		select {
		case c.out <- exit:
			delete(h.clients, c)
			h.attached.Add(-1)
			close(c.out)
		default:
			h.unsafeDrop(c)
		}
	}
	h.mu.Unlock()
	flushed := make(chan struct{})
	go func() { h.writers.Wait(); close(flushed) }()
	select {
	case <-flushed:
	case <-time.After(attachFlush):
		// The shim's exit closes the connections of clients too slow
		// to take the rest.
	}
}

// close removes the socket of a container that failed to start.
func closeAttach(dir string, ln *net.UnixListener) {
	ln.Close()
	os.Remove(filepath.Join(dir, AttachSocket))
}

// teeReader passes what it reads to the attached clients as frames of
// kind: the shim's log copy reads the container's output through it.
type teeReader struct {
	r    io.Reader
	h    *attachHub
	kind FrameKind
}

func (t teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.h.broadcast(t.kind, p[:n])
	}
	return n, err
}
