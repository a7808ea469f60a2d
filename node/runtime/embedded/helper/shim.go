package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"cairn/internal/nsthread"
)

// shimReport is the one message a shim sends the agent, on its fd 3,
// once the container runs or failed to start.
type shimReport struct {
	PID   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// copyDrain bounds how long the shim waits for the output pipes to close
// after the container's init died (the kernel kills the rest of its PID
// namespace, asynchronously).
const copyDrain = 2 * time.Second

// runShim is the main of the shim process: `__container-shim DIR`, with
// the report pipe as fd 3 and stdout/stderr going to DIR/shim.log (see
// StartShim).
func runShim(args []string) int {
	if len(args) != 1 {
		return usage(shimCommand, args)
	}
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
	// of running containers. Handled (not ignored) signals are reset in
	// the container, which starts with default dispositions.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	reopen := make(chan os.Signal, 1)
	signal.Notify(reopen, syscall.SIGUSR1)

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

	proc, outR, errR, err := s.startInit(&sp)
	if err != nil {
		return s.fail(err)
	}
	pidStart, _ := ProcStartTime(proc.Process.Pid)
	if err := s.saveState(func(st *State) {
		st.PID, st.PIDStart, st.Running, st.StartedAt = proc.Process.Pid, pidStart, true, time.Now().UnixNano()
	}); err != nil {
		proc.Process.Kill()
		proc.Wait()
		return s.fail(err)
	}
	s.sendReport(shimReport{PID: proc.Process.Pid})

	var copying sync.WaitGroup
	for stream, r := range map[string]*os.File{"stdout": outR, "stderr": errR} {
		copying.Add(1)
		go func() {
			defer copying.Done()
			log.copyStream(r, stream)
		}()
	}
	go func() {
		for range reopen {
			if err := log.reopen(); err != nil {
				fmt.Fprintln(os.Stderr, "shim:", err)
			}
			s.saveState(func(st *State) { st.LogReopens++ })
		}
	}()

	proc.Wait()
	drained := make(chan struct{})
	go func() { copying.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(copyDrain):
		// Something still holds the pipes; the output after the exit
		// of the container's main process is not worth blocking for.
		outR.Close()
		errR.Close()
	}
	code := ExitCode(proc.ProcessState)
	reason := ReasonCompleted
	switch {
	case sp.Cgroups.OOMKills() > 0:
		reason = ReasonOOMKilled
	case code != 0:
		reason = ReasonError
	}
	return s.saveState(func(st *State) {
		st.Running, st.FinishedAt, st.ExitCode, st.Reason = false, time.Now().UnixNano(), int32(code), reason
	})
}

// startInit starts the container's init in new namespaces, places it in
// the container's cgroups, lets it exec the command, and returns once
// the exec succeeded, with the read ends of the output pipes.
func (s *shim) startInit(sp *Spec) (proc *exec.Cmd, outR, errR *os.File, err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	// go: the shim tells the init it may exec; fail: the init's setup
	// error, or EOF when the exec closed it (close-on-exec).
	goR, goW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	failR, failW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	defer goW.Close()
	defer failR.Close()
	proc = &exec.Cmd{
		Path:       SelfExe,
		Args:       []string{os.Args[0], initCommand, s.dir},
		Env:        []string{},
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: []*os.File{goR, failW},
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:     true,
			Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
		},
	}
	// Started from a thread inside the sandbox's network namespace, the
	// init is born in it.
	err = nsthread.Run(sp.NetNS, proc.Start)
	for _, f := range []*os.File{outW, errW, goR, failW} {
		f.Close()
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("starting the container init: %w", err)
	}
	abort := func(err error) (*exec.Cmd, *os.File, *os.File, error) {
		proc.Process.Kill()
		proc.Wait()
		outR.Close()
		errR.Close()
		return nil, nil, nil, err
	}
	if err := sp.Cgroups.AddProcess(proc.Process.Pid); err != nil {
		return abort(err)
	}
	if sp.OOMScoreAdj != 0 {
		// Best effort: lowering it needs CAP_SYS_RESOURCE, which root
		// lacks in some VMs; the kubelet's values are advisory anyway.
		os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", proc.Process.Pid), []byte(strconv.FormatInt(sp.OOMScoreAdj, 10)), 0o644)
	}
	if _, err := goW.Write([]byte("go")); err != nil {
		return abort(fmt.Errorf("releasing the container init: %w", err))
	}
	goW.Close()
	msg, _ := io.ReadAll(failR)
	if len(msg) > 0 {
		proc.Wait()
		outR.Close()
		errR.Close()
		return nil, nil, nil, errors.New(string(msg))
	}
	return proc, outR, errR, nil
}
