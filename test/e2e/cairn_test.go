package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// commandTimeout bounds one short cairn command; a command that hangs
// longer is itself a failure a user would see.
const commandTimeout = 30 * time.Second

// cairnBin returns the binary under test.
func cairnBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("CAIRN_BIN")
	if bin == "" {
		t.Fatal("e2e: CAIRN_BIN is not set (TestMain sets it)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("e2e: CAIRN_BIN=%s: %v (build it with `go build -o bin/cairn ./cmd/cairn` and pass an absolute path)", bin, err)
	}
	return bin
}

// result is what one cairn command printed and how it exited.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("$ cairn %s\nexit code %d\n--- stdout\n%s--- stderr\n%s",
		strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs cairn to completion. It fails the test when the command is
// still running after commandTimeout.
func run(t testing.TB, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cairnBin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		r.code = -1
		t.Fatalf("still running after %s, killed:\n%s", commandTimeout, r)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running cairn %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustRun runs cairn and fails the test unless it exits 0.
func mustRun(t testing.TB, args ...string) result {
	t.Helper()
	r := run(t, args...)
	if r.code != 0 {
		t.Fatalf("want exit code 0:\n%s", r)
	}
	return r
}

// runRefused runs cairn, wants a non-zero exit, and wants stderr to hold
// every one of the given phrases, so the user learns what to fix.
func runRefused(t testing.TB, want []string, args ...string) result {
	t.Helper()
	r := run(t, args...)
	if r.code == 0 {
		t.Fatalf("want a non-zero exit code:\n%s", r)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, r)
		}
	}
	return r
}

// pkiInit creates a new cluster CA in a fresh temporary dir.
func pkiInit(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	mustRun(t, "pki", "init", "--dir", dir)
	return dir
}
