package devcluster

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// controlledDir makes a state directory whose path is longer than a
// socket address holds, with a run state naming this process as the
// supervisor and a control server for a cluster without children.
func controlledDir(t *testing.T) (string, *supervisor) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &supervisor{
		cfg: Config{Out: io.Discard, Command: "cairn"},
		l:   Layout{Dir: dir},
		state: &RunState{PID: os.Getpid(), StartTime: startTimeOf(os.Getpid()), Dir: dir,
			NoNodesReason: "not root"},
	}
	if err := s.state.write(); err != nil {
		t.Fatal(err)
	}
	return dir, s
}

func TestControlRequestsReachTheSupervisorInALongStateDirectory(t *testing.T) {
	dir, s := controlledDir(t)
	if len(s.l.Control()) < unixPathMax {
		t.Fatalf("the test's socket path %s fits a socket address: it tests nothing", s.l.Control())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Stop(ctx, dir, "s1", false, io.Discard); err == nil || !strings.Contains(err.Error(), "takes no requests yet") {
		t.Errorf("before the control socket: %v, want a cluster still starting", err)
	}
	cs, err := s.serveControl()
	if err != nil {
		t.Fatal(err)
	}
	// A request reaches the supervisor, which answers about its
	// (missing) children.
	err = Stop(ctx, dir, "s1", true, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "s1 is not part of this cluster (it runs its servers only: not root)") {
		t.Errorf("stop s1: %v", err)
	}
	err = Start(ctx, dir, "cairn-dev-n2", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "n2 is not part of this cluster") {
		t.Errorf("start cairn-dev-n2: %v", err)
	}
	// A malformed request gets an answer, not a hang.
	conn, err := dialControl(ctx, s.l.Control())
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("start s1\n"))
	raw, _ := io.ReadAll(conn)
	conn.Close()
	if !strings.Contains(string(raw), "malformed control request") {
		t.Errorf("answer to a malformed request: %q", raw)
	}
	cs.close()
	if _, err := os.Stat(s.l.Control()); !os.IsNotExist(err) {
		t.Errorf("the control socket outlived its server: %v", err)
	}
}

func TestControlRefusesUnknownNamesAndMissingClusters(t *testing.T) {
	ctx := context.Background()
	if err := Start(ctx, t.TempDir(), "s4", io.Discard); err == nil || !strings.Contains(err.Error(), "use one of s1, s2, s3, n1, n2") {
		t.Errorf("start s4: %v", err)
	}
	if err := Start(ctx, t.TempDir(), "s1", io.Discard); err == nil || !strings.Contains(err.Error(), "no cluster runs in") {
		t.Errorf("start without a cluster: %v", err)
	}
}

func TestControlSocketLeftByADeadSupervisorIsReplaced(t *testing.T) {
	dir, s := controlledDir(t)
	// A socket file nobody listens on, as a supervisor killed with -9
	// leaves it.
	err := viaDirFD(s.l.Control(), func(name string) error {
		ln, err := net.Listen("unix", name)
		if err != nil {
			return err
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		return ln.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.serveControl()
	if err != nil {
		t.Fatal(err)
	}
	defer cs.close()
	if err := Stop(context.Background(), dir, "s2", false, io.Discard); err == nil || !strings.Contains(err.Error(), "not part of this cluster") {
		t.Errorf("stop s2 through the new socket: %v", err)
	}
}

func TestControlServerStopsDespiteAClientThatSendsNothing(t *testing.T) {
	_, s := controlledDir(t)
	cs, err := s.serveControl()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := dialControl(context.Background(), s.l.Control())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(50 * time.Millisecond) // accepted, reading its request
	closed := make(chan struct{})
	go func() { cs.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(requestReadTimeout / 2):
		t.Fatal("the control server waited for a client that sent nothing to stop")
	}
}
