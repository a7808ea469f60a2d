package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// shimReport is the one message a shim sends the agent, on its fd 3,
// once the container runs or failed to start.
type shimReport struct {
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// shimIgnoredSignals are the signals the shim ignores.
var shimIgnoredSignals = [...]syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE, syscall.SIGUSR1}

// resetSignals are the signals the container's process sets back to
// their defaults before its exec, which would keep them ignored: the
// shim's own, and any it inherited ignored from whoever started the
// agent. Set once, before the shim starts a container.
var resetSignals []syscall.Signal

// copyDrain bounds how long the shim waits for the output pipes to close
// after the container's init died (the kernel kills the rest of its PID
// namespace, asynchronously).
const copyDrain = 2 * time.Second

// leftoverKillWait bounds how long the shim waits for the processes a
// container left in a shared PID namespace to die of SIGKILL.
const leftoverKillWait = 5 * time.Second

// runShim is the main of the shim process: `__container-shim DIR`, with
// the report pipe as fd 3 and stdout/stderr going to DIR/shim.log (see
// StartShim).
func runShim(args []string) int {
	if len(args) != 1 {
		return usage(shimCommand, args)
	}
	// The report pipe, inherited, is the shim's alone.
	unix.CloseOnExec(3)
	s := &shim{dir: args[0], report: os.NewFile(3, "report")}
	if err := s.run(); err != nil {
		fmt.Fprintln(os.Stderr, "shim:", err)
		return 1
	}
	return 0
}

// shim supervises one container.
type shim struct {
	dir    string
	report *os.File

	mu sync.Mutex
	st State
}

func (s *shim) saveState(update func(*State)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	update(&s.st)
	return WriteState(s.dir, s.st)
}

// sendReport tells the agent how the start went and closes the pipe.
func (s *shim) sendReport(r shimReport) {
	if s.report == nil {
		return
	}
	json.NewEncoder(s.report).Encode(r)
	s.report.Close()
	s.report = nil
}

// fail records a failed start and tells the agent.
func (s *shim) fail(err error) error {
	s.saveState(func(st *State) {
		st.Running, st.FinishedAt, st.ExitCode = false, time.Now().UnixNano(), 128
		st.Reason, st.Message = ReasonStartError, err.Error()
	})
	s.sendReport(shimReport{Error: err.Error()})
	return err
}

func (s *shim) run() error {
	// The agent's stop or a terminal's ^C must not end the supervision
	// of running containers. Ignoring costs less than handling, which
	// takes two threads of their own; the container's process sets these
	// back to their defaults before its exec (see forkChild).
	for _, sig := range shimIgnoredSignals {
		signal.Ignore(sig)
	}
	var err error
	if resetSignals, err = ignoredSignals(); err != nil {
		fmt.Fprintln(os.Stderr, "shim:", err)
		resetSignals = shimIgnoredSignals[:]
	}

	start, _ := ProcStartTime(os.Getpid())
	s.st = State{ShimPID: os.Getpid(), ShimStart: start}
	sp, err := ReadSpec(s.dir)
	if err != nil {
		return s.fail(err)
	}
	log, err := openCRILog(sp.LogPath, time.Now)
	if err != nil {
		return s.fail(err)
	}
	defer log.close()

	// The socket exists before the container is recorded running, so
	// that an attach never finds a running container without it. The
	// container runs all the same if it cannot be made.
	ln, err := listenAttach(s.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shim: no attach socket:", err)
	}
	proc, cio, err := s.startContainer(&sp)
	if err != nil {
		if ln != nil {
			closeAttach(s.dir, ln)
		}
		return s.fail(err)
	}
	reopen := func() error {
		if err := log.reopen(); err != nil {
			return err
		}
		return s.saveState(func(st *State) { st.LogReopens++ })
	}
	var hub *attachHub
	if ln != nil {
		hub = newAttachHub(s.dir, &sp, ln, cio, reopen)
	} else {
		// The agent cannot ask over the socket: it signals, as it does
		// the shims that predate the socket.
		reopenOnSignal(reopen)
	}
	pidStart, _ := ProcStartTime(int(proc))
	if err := s.saveState(func(st *State) {
		st.PID, st.PIDStart, st.Running, st.StartedAt = int(proc), pidStart, true, time.Now().UnixNano()
		st.SocketReopenOnly = ln != nil
	}); err != nil {
		proc.kill()
		hub.shutdown(proc.wait())
		return s.fail(err)
	}
	s.sendReport(shimReport{PID: int(proc)})

	var copying sync.WaitGroup
	for _, out := range cio.outputs() {
		copying.Add(1)
		go func() {
			defer copying.Done()
			log.copyStream(teeReader{out.r, hub, out.kind}, out.stream)
		}()
	}

	code := proc.wait()
	if sp.PIDNamespaceOf != nil || sp.HostPID {
		// The kernel ends the rest of a PID namespace with its first
		// process; in a shared one, what the command left would run on.
		if err := sp.Cgroups.KillAll(leftoverKillWait); err != nil {
			fmt.Fprintln(os.Stderr, "shim:", err)
		}
	}
	drained := make(chan struct{})
	go func() { copying.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(copyDrain):
		// Something still holds the pipes (or the terminal); the output
		// after the exit of the container's main process is not worth
		// blocking for.
	}
	cio.close()
	reason := ReasonCompleted
	switch {
	case sp.Cgroups.OOMKills() > 0:
		reason = ReasonOOMKilled
	case code != 0:
		reason = ReasonError
	}
	err = s.saveState(func(st *State) {
		st.Running, st.FinishedAt, st.ExitCode, st.Reason = false, time.Now().UnixNano(), int32(code), reason
	})
	// Attached clients learn of the exit once it is recorded.
	hub.shutdown(code)
	return err
}

// reopenOnSignal calls reopen on every SIGUSR1, which the shim otherwise
// ignores.
func reopenOnSignal(reopen func() error) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	go func() {
		for range sigs {
			if err := reopen(); err != nil {
				fmt.Fprintln(os.Stderr, "shim: reopening the log:", err)
			}
		}
	}()
}

// containerIO is the shim's side of the container's stdin, stdout and
// stderr. Without stdin or tty in the spec, the container's stdin is
// /dev/null and its stdout and stderr are pipes.
type containerIO struct {
	// stdout and stderr are the read ends of the output pipes. With a
	// tty, stdout is the terminal's master and stderr is nil.
	stdout, stderr *os.File
	// stdin is where attached clients' input goes: the write end of the
	// stdin pipe, or the master with a tty; nil without stdin.
	stdin *os.File
	// term is the terminal's master, with a tty.
	term *os.File
}

// output is one output of the container, to log and to attach.
type output struct {
	r      *os.File
	stream string
	kind   FrameKind
}

func (c *containerIO) outputs() []output {
	outs := []output{{c.stdout, "stdout", FrameStdout}}
	if c.stderr != nil {
		outs = append(outs, output{c.stderr, "stderr", FrameStderr})
	}
	return outs
}

// close closes the shim's ends, which ends copies still reading them.
func (c *containerIO) close() {
	for _, f := range []*os.File{c.stdout, c.stderr, c.stdin, c.term} {
		if f != nil {
			f.Close()
		}
	}
}

// newContainerIO makes the container's stdio as its spec asks, and
// returns the shim's side and the container's stdin, stdout and stderr
// (a nil stdin is /dev/null). The caller closes the container's ends
// once its process has them.
func newContainerIO(sp *Spec) (cio *containerIO, stdin, stdout, stderr *os.File, err error) {
	cio = &containerIO{}
	if sp.TTY {
		// The init makes the terminal in the container's own devpts and
		// hands over its master (see setupConsole).
		return cio, nil, nil, nil, nil
	}
	fail := func(err error) (*containerIO, *os.File, *os.File, *os.File, error) {
		cio.close()
		for _, f := range []*os.File{stdin, stdout, stderr} {
			if f != nil {
				f.Close()
			}
		}
		return nil, nil, nil, nil, err
	}
	if cio.stdout, stdout, err = os.Pipe(); err != nil {
		return fail(err)
	}
	if cio.stderr, stderr, err = os.Pipe(); err != nil {
		return fail(err)
	}
	if sp.Stdin {
		if stdin, cio.stdin, err = os.Pipe(); err != nil {
			return fail(err)
		}
	}
	return cio, stdin, stdout, stderr, nil
}

// startContainer starts the container's process in its new namespaces
// (see launch), places it in the container's cgroups, lets it exec the
// command, and returns once the exec succeeded, with the shim's side of
// the container's stdio.
func (s *shim) startContainer(sp *Spec) (proc child, cio *containerIO, err error) {
	cio, inC, outC, errC, err := newContainerIO(sp)
	if err != nil {
		return 0, nil, err
	}
	// The child's files, closed once it has them.
	var childEnds []*os.File
	defer func() {
		for _, f := range childEnds {
			f.Close()
		}
	}()
	for _, f := range []*os.File{inC, outC, errC} {
		if f != nil {
			childEnds = append(childEnds, f)
		}
	}
	if !sp.TTY && inC == nil {
		if inC, err = os.Open(os.DevNull); err != nil {
			cio.close()
			return 0, nil, err
		}
		childEnds = append(childEnds, inC)
	}
	// The child places itself in the container's cgroups with these.
	var cgroupProcs []*os.File
	for _, name := range sp.Cgroups.ProcsFiles() {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			cio.close()
			return 0, nil, fmt.Errorf("opening the container's cgroup: %w", err)
		}
		childEnds = append(childEnds, f)
		cgroupProcs = append(cgroupProcs, f)
	}
	// The child's failure, or EOF when its exec closed the pipe
	// (close-on-exec).
	failR, failW, err := os.Pipe()
	if err != nil {
		cio.close()
		return 0, nil, err
	}
	defer failR.Close()
	childEnds = append(childEnds, failW)

	pid, master, err := launch(s.dir, sp, [3]*os.File{inC, outC, errC}, cgroupProcs, failW)
	if err != nil {
		cio.close()
		return 0, nil, err
	}
	for _, f := range childEnds {
		f.Close()
	}
	childEnds = nil
	if master != nil {
		cio.stdout, cio.term = master, master
		if sp.Stdin {
			cio.stdin = master
		}
	}
	proc = child(pid)
	var failure childFailure
	switch n, _ := io.ReadFull(failR, failure[:]); n {
	case 0:
		return proc, cio, nil
	case len(failure):
		proc.wait()
		cio.close()
		return 0, nil, failure.describe(sp)
	default:
		proc.kill()
		proc.wait()
		cio.close()
		return 0, nil, errors.New("the container's process failed to start")
	}
}
