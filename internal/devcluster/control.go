package devcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The supervisor takes requests from other terminals on a Unix socket in
// the state directory, so that a drill can stop a server or agent and
// start it again while the rest of the cluster runs. A client sends one
// request as a JSON line; the supervisor answers with JSON lines: what
// it does as it goes, then a last one with done set.

// Operations of a control request.
const (
	opStart = "start"
	opStop  = "stop"
)

// controlRequest asks the supervisor to start or stop a child.
type controlRequest struct {
	Op   string `json:"op"`
	Name string `json:"name"`
	// Kill stops with SIGKILL at once, as a crash would, instead of
	// SIGTERM.
	Kill bool `json:"kill,omitempty"`
}

// requestReadTimeout bounds how long the supervisor waits for a
// client's request line, so that a client that sends nothing does not
// keep a goroutine forever.
const requestReadTimeout = 5 * time.Second

// controlReply is one line of the supervisor's answer.
type controlReply struct {
	Line  string `json:"line,omitempty"`
	Error string `json:"error,omitempty"`
	Done  bool   `json:"done,omitempty"`
}

// Start asks the supervisor of the cluster in dir to start the server or
// agent name again (s1-s3, n1-n2), and waits until it is ready: its API
// server answers, or its node is Ready. It writes the supervisor's
// progress to out.
func Start(ctx context.Context, dir, name string, out io.Writer) error {
	return control(ctx, dir, controlRequest{Op: opStart, Name: name}, out)
}

// Stop asks the supervisor of the cluster in dir to stop the server or
// agent name: with SIGTERM, then SIGKILL after the grace period, or with
// kill at once, as a crash would. The rest of the cluster keeps running;
// Start brings it back.
func Stop(ctx context.Context, dir, name string, kill bool, out io.Writer) error {
	return control(ctx, dir, controlRequest{Op: opStop, Name: name, Kill: kill}, out)
}

func control(ctx context.Context, dir string, req controlRequest, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	if _, err := childName(req.Name); err != nil {
		return err
	}
	st, err := ReadRunState(dir)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("devcluster: no cluster runs in %s: start one with `cairn dev`", dir)
	}
	if !st.SupervisorRunning() {
		return fmt.Errorf("devcluster: the `cairn dev` that ran the cluster in %s is gone (pid %d): `cairn dev down` stops what it left running, then `cairn dev` starts the cluster again", dir, st.PID)
	}
	conn, err := dialControl(ctx, Layout{Dir: dir}.Control())
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("devcluster: the cluster in %s takes no requests yet: it is still starting, or its `cairn dev` predates start and stop (restart it)", dir)
	}
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	dec := json.NewDecoder(conn)
	for {
		var r controlReply
		if err := dec.Decode(&r); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("devcluster: the supervisor hung up without an answer (%v); see `cairn dev status`", err)
		}
		if r.Line != "" {
			fmt.Fprintln(out, r.Line)
		}
		if r.Error != "" {
			return errors.New(r.Error)
		}
		if r.Done {
			return nil
		}
	}
}

// childName returns the short name (s1, n1) of a server or agent named
// by its short name or its node name (cairn-dev-n1).
func childName(name string) (string, error) {
	short := strings.TrimPrefix(name, NamePrefix)
	for _, n := range LogNames() {
		if n == short {
			return short, nil
		}
	}
	return "", fmt.Errorf("devcluster: no server or agent named %q: use one of %s", name, strings.Join(LogNames(), ", "))
}

// unixPathMax is the room for a path in a Unix socket address, with its
// terminating NUL.
const unixPathMax = len(unix.RawSockaddrUnix{}.Path)

// viaDirFD calls fn with a name of the socket path p short enough for a
// socket address: p itself, or for a long state directory, p's base name
// under the /proc/self/fd link of the directory held open meanwhile.
func viaDirFD(p string, fn func(name string) error) error {
	if len(p) < unixPathMax {
		return fn(p)
	}
	fd, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fn(fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(p)))
}

func dialControl(ctx context.Context, p string) (net.Conn, error) {
	var conn net.Conn
	err := viaDirFD(p, func(name string) error {
		var err error
		conn, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "unix", name)
		return err
	})
	return conn, err
}

// controlServer serves the control socket of a supervisor.
type controlServer struct {
	s    *supervisor
	ln   *net.UnixListener
	path string
	// ctx ends the requests under way when the supervisor stops.
	ctx      context.Context
	cancel   context.CancelFunc
	requests sync.WaitGroup

	mu    sync.Mutex
	busy  map[string]bool // children with a request under way
	conns map[net.Conn]bool
}

func (cs *controlServer) claim(name string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.busy[name] {
		return false
	}
	cs.busy[name] = true
	return true
}

func (cs *controlServer) release(name string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.busy, name)
}

// serveControl listens on the control socket of the state directory. A
// socket file left by a supervisor that died is replaced: the directory
// lock says no other supervisor runs.
func (s *supervisor) serveControl() (*controlServer, error) {
	p := s.l.Control()
	os.Remove(p)
	var ln net.Listener
	err := viaDirFD(p, func(name string) error {
		var err error
		ln, err = net.Listen("unix", name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("devcluster: the control socket: %w", err)
	}
	ul := ln.(*net.UnixListener)
	// The name it was bound by may have been a /proc link that is gone.
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(p, 0o600); err != nil {
		ul.Close()
		os.Remove(p)
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	cs := &controlServer{s: s, ln: ul, path: p, busy: map[string]bool{}, conns: map[net.Conn]bool{}}
	cs.ctx, cs.cancel = context.WithCancel(context.Background())
	go cs.accept()
	return cs, nil
}

// close stops taking requests and waits for those under way, which it
// cuts short: their clients learn that the cluster is stopping.
func (cs *controlServer) close() {
	cs.ln.Close()
	cs.cancel()
	cs.mu.Lock()
	for conn := range cs.conns {
		// Unblocks a request still being read; answers still go out.
		conn.SetReadDeadline(time.Now())
	}
	cs.mu.Unlock()
	cs.requests.Wait()
	os.Remove(cs.path)
}

func (cs *controlServer) accept() {
	for {
		conn, err := cs.ln.Accept()
		if err != nil {
			return
		}
		cs.mu.Lock()
		if cs.ctx.Err() != nil {
			cs.mu.Unlock()
			conn.Close()
			return
		}
		cs.conns[conn] = true
		cs.requests.Add(1)
		cs.mu.Unlock()
		go func() {
			defer cs.requests.Done()
			defer func() {
				cs.mu.Lock()
				delete(cs.conns, conn)
				cs.mu.Unlock()
				conn.Close()
			}()
			cs.serve(conn)
		}()
	}
}

func (cs *controlServer) serve(conn net.Conn) {
	enc := json.NewEncoder(conn)
	var req controlRequest
	conn.SetReadDeadline(time.Now().Add(requestReadTimeout))
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	switch {
	case err != nil && cs.ctx.Err() != nil:
		enc.Encode(controlReply{Error: "devcluster: the cluster is stopping"})
		return
	case err != nil:
		enc.Encode(controlReply{Error: fmt.Sprintf("devcluster: a malformed control request: %v", err)})
		return
	}
	say := func(format string, args ...any) { enc.Encode(controlReply{Line: fmt.Sprintf(format, args...)}) }
	short, err := childName(req.Name)
	if err != nil {
		enc.Encode(controlReply{Error: err.Error()})
		return
	}
	// One request at a time per child: two starts would run two.
	if !cs.claim(short) {
		enc.Encode(controlReply{Error: fmt.Sprintf("devcluster: a start or stop of %s is under way; try again once it is done", short)})
		return
	}
	defer cs.release(short)
	switch req.Op {
	case opStart:
		err = cs.s.restartChild(cs.ctx, req.Name, say)
	case opStop:
		err = cs.s.stopChild(cs.ctx, req.Name, req.Kill, say)
	default:
		err = fmt.Errorf("devcluster: unknown control operation %q (start or stop)", req.Op)
	}
	if err != nil {
		enc.Encode(controlReply{Error: err.Error()})
		return
	}
	enc.Encode(controlReply{Done: true})
}

// findChild returns the current process of the server or agent name,
// and whether it is an agent.
func (s *supervisor) findChild(name string) (*child, bool, error) {
	short, err := childName(name)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.servers {
		if c.name == short {
			return c, false, nil
		}
	}
	for _, c := range s.agents {
		if c.name == short {
			return c, true, nil
		}
	}
	return nil, false, fmt.Errorf("devcluster: %s is not part of this cluster (%s)", short, s.state.noAgents())
}

// stopChild stops the server or agent name, as `cairn dev stop` asks.
func (s *supervisor) stopChild(ctx context.Context, name string, kill bool, say func(string, ...any)) error {
	c, _, err := s.findChild(name)
	if err != nil {
		return err
	}
	if c.exited() {
		return fmt.Errorf("devcluster: %s is not running (%s); `%s dev start %s` starts it", c.name, c.exitStatus(), s.cfg.Command, c.name)
	}
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	say("Stopping %s (pid %d) with %s...", c.name, c.cmd.Process.Pid, unix.SignalName(sig))
	c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(stopGrace):
		say("%s did not stop within %s: killing it", c.name, stopGrace)
		c.cmd.Process.Kill()
		<-c.done
	case <-ctx.Done():
		return fmt.Errorf("devcluster: the cluster is stopping")
	}
	say("%s stopped (%s).", c.name, c.exitStatus())
	s.out("\n%s stopped by `%s dev stop` (%s); `%s dev start %s` starts it again.\n", c.name, s.cfg.Command, c.exitStatus(), s.cfg.Command, c.name)
	return nil
}

// restartChild starts the server or agent name again, as `cairn dev
// start` asks, and waits until it is ready.
func (s *supervisor) restartChild(ctx context.Context, name string, say func(string, ...any)) error {
	old, agent, err := s.findChild(name)
	if err != nil {
		return err
	}
	if !old.exited() {
		return fmt.Errorf("devcluster: %s is running (pid %d); `%s dev stop %s` stops it", old.name, old.cmd.Process.Pid, s.cfg.Command, old.name)
	}
	begin := time.Now()
	if agent {
		n, _ := s.topo.node(old.name)
		c, err := s.startAgent(n, s.nodeOptions())
		if err != nil {
			return err
		}
		say("Started %s (pid %d); waiting for node %s to be Ready...", c.name, c.cmd.Process.Pid, n.Name)
		if err := s.waitNodesReady(ctx, []*child{c}, []Node{n}, begin); err != nil {
			return err
		}
		say("%s is Ready (%s).", n.Name, time.Since(begin).Round(100*time.Millisecond))
	} else {
		srv, _ := s.topo.server(old.name)
		c, err := s.startServer(srv)
		if err != nil {
			return err
		}
		say("Started %s (pid %d); waiting for its API server...", c.name, c.cmd.Process.Pid)
		if err := s.waitServerReady(ctx, c, srv); err != nil {
			return err
		}
		say("%s is ready (%s).", c.name, time.Since(begin).Round(100*time.Millisecond))
	}
	s.out("\n%s started again by `%s dev start`.\n", old.name, s.cfg.Command)
	return nil
}
