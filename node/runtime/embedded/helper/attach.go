package helper

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// AttachSocket is the unix socket, of mode 0600 in the container's
// directory, on which a container's shim serves the attach protocol from
// the start of the container to its exit. The protocol joins clients
// (the agent's Runtime.Attach) to the container's own stdin, stdout and
// stderr, which the shim holds; as the socket is the shim's, a restarted
// agent attaches to the containers it adopted.
//
//  1. The client sends one line of JSON, an AttachHeader, naming the
//     streams it wants: {"stdin":true,"stdout":true,"tty":true}\n
//  2. The shim answers one line of JSON: {} when it accepts, or
//     {"error":"..."} (see CheckAttach), after which it closes.
//  3. Then both sides send frames: a kind byte, the length of the data
//     as a big-endian uint32 (at most MaxFrameData), and the data.
//
// Client to shim: FrameStdin (input bytes), FrameStdinClose (no data:
// the client's input ended) and FrameResize (JSON {"width":W,"height":H},
// for a tty). Shim to client: FrameStdout and FrameStderr (output bytes;
// on a tty all output is stdout) for the streams the client asked for,
// then FrameExit (JSON {"exitCode":N}) once the container exited and its
// output was sent, after which the shim closes the connection.
//
// Frames of unknown kinds are ignored, for newer peers. Output reaches
// every attached client; the input of all of them goes to the
// container's stdin. With the spec's StdinOnce, the first end of a
// client's input (FrameStdinClose, or the end of a connection that had
// stdin) closes the container's stdin for good; on a tty, which cannot
// be closed without hanging up the process, it types ^D instead. A
// client that does not take its output as fast as the container writes
// it (a full queue for a quarter of a second) is dropped: the shim
// closes its connection without a FrameExit, rather than block the
// container and its log or buffer without bound.
const AttachSocket = "attach.sock"

// EOT is ^D, which a terminal in canonical mode turns into an end of
// file for the process reading it: the end of a terminal's input.
const EOT = 0x04

// FrameKind is the first byte of an attach frame.
type FrameKind byte

// Kinds of attach frames.
const (
	FrameStdin      FrameKind = 1
	FrameStdinClose FrameKind = 2
	FrameResize     FrameKind = 3
	FrameStdout     FrameKind = 4
	FrameStderr     FrameKind = 5
	FrameExit       FrameKind = 6
)

// MaxFrameData bounds the data of one frame; a peer sending more is cut
// off.
const MaxFrameData = 1 << 20

// frameHeader is the kind byte and the length.
const frameHeader = 5

// AttachHeader is the first line a client sends: the streams it wants,
// and whether it attaches as a terminal.
type AttachHeader struct {
	Stdin  bool `json:"stdin,omitempty"`
	Stdout bool `json:"stdout,omitempty"`
	Stderr bool `json:"stderr,omitempty"`
	TTY    bool `json:"tty,omitempty"`
	// ReopenLog asks the shim to reopen the container's log file, after
	// the kubelet rotated it, instead of attaching: it answers once it
	// has, and closes the connection.
	ReopenLog bool `json:"reopenLog,omitempty"`
}

// attachReply is the shim's answer to an AttachHeader.
type attachReply struct {
	Error string `json:"error,omitempty"`
}

// ResizeData is the data of a FrameResize, in characters.
type ResizeData struct {
	Width  uint16 `json:"width"`
	Height uint16 `json:"height"`
}

// ExitData is the data of a FrameExit.
type ExitData struct {
	ExitCode int32 `json:"exitCode"`
}

// CheckAttach says why a container created with sp cannot take an
// attach with h, or nil if it can. The agent checks before it connects,
// and the shim again, so that both give the same answer.
func CheckAttach(sp *Spec, h AttachHeader) error {
	switch {
	case h.Stdin && !sp.Stdin:
		return errors.New("stdin is not enabled for this container: it must be created with stdin (stdin: true in the pod's container spec) to attach to its input")
	case h.TTY && !sp.TTY:
		return errors.New("the container has no tty: it must be created with one (tty: true in the pod's container spec) to attach with a terminal")
	}
	// A client without a terminal may attach to a container with one
	// (kubectl attach without -it does): the terminal's output comes as
	// stdout, and its input goes to the terminal.
	return nil
}

// AppendFrame appends a frame of kind with data to buf.
func AppendFrame(buf []byte, kind FrameKind, data []byte) []byte {
	buf = append(buf, byte(kind), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(buf[len(buf)-4:], uint32(len(data)))
	return append(buf, data...)
}

// ReadFrame reads one frame from r. The data is valid until the next
// call with the same buf, which it reuses when large enough.
func ReadFrame(r io.Reader, buf []byte) (FrameKind, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrameData {
		return 0, nil, fmt.Errorf("helper: attach frame of %d bytes, more than %d", n, MaxFrameData)
	}
	if int(n) > cap(buf) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, unexpected(err)
	}
	return FrameKind(h[0]), buf, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AttachConn is a client's connection to a container's shim, after the
// shim accepted its AttachHeader.
type AttachConn struct {
	conn net.Conn
	r    *bufio.Reader
	buf  []byte

	wmu sync.Mutex
	w   []byte
}

// ErrNoAttachSocket is DialAttach's error when the container's
// directory has no attach socket, or nothing listens on it: its shim
// predates attach, could not make the socket, or has exited.
var ErrNoAttachSocket = errors.New("helper: the container's shim has no attach socket")

// DialAttach connects to the shim of the container whose directory is
// dir, sends h, and returns the connection once the shim accepted it.
// The shim's refusal is returned as an error with its reason.
func DialAttach(ctx context.Context, dir string, h AttachHeader) (*AttachConn, error) {
	conn, err := dialInDir(ctx, dir, AttachSocket)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ECONNREFUSED) {
		return nil, ErrNoAttachSocket
	}
	if err != nil {
		return nil, fmt.Errorf("helper: connecting to the container's shim: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	line, err := json.Marshal(h)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("helper: %w", err)
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		conn.Close()
		return nil, fmt.Errorf("helper: attaching to the container's shim: %w", err)
	}
	r := bufio.NewReader(conn)
	var rep attachReply
	raw, err := r.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(raw, &rep)
	}
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("helper: the container's shim did not answer the attach (has the container exited?): %w", err)
	}
	if rep.Error != "" {
		conn.Close()
		return nil, errors.New(rep.Error)
	}
	return &AttachConn{conn: conn, r: r}, nil
}

// ReopenLog asks the shim of the container whose directory is dir to
// reopen the container's log file, and returns once it has. A shim from
// before this request attaches a client without streams instead, and
// answers without reopening anything: the caller tells by the state's
// LogReopens.
func ReopenLog(ctx context.Context, dir string) error {
	c, err := DialAttach(ctx, dir, AttachHeader{ReopenLog: true})
	if err != nil {
		return err
	}
	return c.Close()
}

// ReadFrame reads the next frame from the shim; the data is valid until
// the next call.
func (c *AttachConn) ReadFrame() (FrameKind, []byte, error) {
	kind, data, err := ReadFrame(c.r, c.buf)
	if cap(data) > cap(c.buf) {
		c.buf = data[:0]
	}
	return kind, data, err
}

// WriteFrame sends one frame to the shim; it is safe for concurrent use.
func (c *AttachConn) WriteFrame(kind FrameKind, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w = AppendFrame(c.w[:0], kind, data)
	_, err := c.conn.Write(c.w)
	return err
}

// Close closes the connection, which ends a ReadFrame or WriteFrame in
// progress.
func (c *AttachConn) Close() error { return c.conn.Close() }

// dialInDir connects to the unix socket name in dir. The path of a unix
// socket is limited to 107 bytes, less than a container's directory may
// take: the socket is reached through a descriptor of the directory.
func dialInDir(ctx context.Context, dir, name string) (net.Conn, error) {
	var conn net.Conn
	err := inDir(dir, name, func(path string) error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, "unix", path)
		return err
	})
	return conn, err
}

// inDir calls fn with a short path of name in dir, valid during the
// call: /proc/self/fd/N/name, N a descriptor of dir.
func inDir(dir, name string, fn func(path string) error) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return fn(fmt.Sprintf("/proc/self/fd/%d/%s", fd, name))
}
