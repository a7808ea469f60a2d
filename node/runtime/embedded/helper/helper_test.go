package helper

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/node/runtime/embedded/shimtest"
)

func TestMain(m *testing.M) {
	// The test binary is its own helper, as the agent's binary is.
	MaybeRun()
	os.Exit(m.Run())
}

func TestShimRecordsAndReportsAFailedStart(t *testing.T) {
	shim := shimtest.Binary(t)
	dir := t.TempDir() // no spec.json: the shim cannot start anything
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := StartShim(ctx, shim, dir)
	if err == nil || !strings.Contains(err.Error(), "spec.json") {
		t.Fatalf("StartShim without a spec: %v, want an error naming spec.json", err)
	}
	st, ok, rerr := ReadState(dir)
	if rerr != nil || !ok || st.Running || st.Reason != ReasonStartError || st.ExitCode != 128 || st.Message != err.Error() {
		t.Errorf("state %+v (ok %v, %v), want a StartError with the reported message", st, ok, rerr)
	}
	if st.ShimPID == 0 || st.ShimStart == 0 {
		t.Errorf("state %+v does not name the shim", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		log, _ := os.ReadFile(filepath.Join(dir, "shim.log"))
		if strings.HasPrefix(string(log), "shim: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shim.log = %q, want the shim's error", log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHelpersRefuseUnexpectedArguments(t *testing.T) {
	shim := shimtest.Binary(t)
	for _, tc := range []struct {
		binary string
		args   []string
	}{
		{shim, []string{shimCommand}},
		{shim, []string{shimCommand, "a", "b"}},
		{SelfExe, []string{execCommand, "dir", "cmd"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(tc.binary, tc.args...)
			out, err := cmd.CombinedOutput()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "unexpected arguments") {
				t.Errorf("exit %v, output %q; want status 2 and a usage message", err, out)
			}
		})
	}
}

func TestExitCodeIsTheShells(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 143},
		{"kill -KILL $$", 137},
	} {
		t.Run(tc.script, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			cmd.Run()
			if got := ExitCode(cmd.ProcessState); got != tc.want {
				t.Errorf("ExitCode = %d, want %d", got, tc.want)
			}
		})
	}
	if got := ExitCode(nil); got != 255 {
		t.Errorf("ExitCode(nil) = %d, want 255", got)
	}
}

func TestAliveTellsAReusedPIDApart(t *testing.T) {
	start, err := ProcStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		pid   int
		start uint64
		want  bool
	}{
		{"this process", os.Getpid(), start, true},
		{"another start time", os.Getpid(), start + 1, false},
		{"no pid", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Alive(tc.pid, tc.start); got != tc.want {
				t.Errorf("Alive(%d, %d) = %v, want %v", tc.pid, tc.start, got, tc.want)
			}
		})
	}
}
