package helper

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAShimsDeathIsExplainedFromItsLog(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ log, want string }{
		{"shim: no attach socket: x\nfatal error: stack growth after fork\n\ngoroutine 1 [running]:\nmain.main()\n", ": fatal error: stack growth after fork"},
		{"panic: boom\n\ngoroutine 1 [running]:\n", ": panic: boom"},
		{"shim: reading the spec: unexpected EOF\n", ": shim: reading the spec: unexpected EOF"},
		{"", ""},
	} {
		path := filepath.Join(dir, "shim.log")
		if err := os.WriteFile(path, []byte(tc.log), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := shimLogCause(path); got != tc.want {
			t.Errorf("shimLogCause(%q) = %q, want %q", tc.log, got, tc.want)
		}
	}
	if got := shimLogCause(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("shimLogCause of a missing log = %q, want nothing", got)
	}
}
