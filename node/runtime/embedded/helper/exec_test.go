package helper

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestExecHelperParsesBothArgvForms(t *testing.T) {
	dir := t.TempDir() // no spec.json: a well-formed argv fails to read it
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"without a terminal, as old agents run it", ExecArgs(SelfExe, dir, []string{"true"})[1:], ExitCannotExec, "spec.json"},
		{"on a terminal", ExecTTYArgs(SelfExe, dir, []string{"true"})[1:], ExitCannotExec, "spec.json"},
		{"a command named like the flag", ExecArgs(SelfExe, dir, []string{ttyFlag})[1:], ExitCannotExec, "spec.json"},
		{"terminal flag without a command", []string{execCommand, dir, ttyFlag, "--"}, 2, "unexpected arguments"},
		{"terminal flag without the separator", []string{execCommand, dir, ttyFlag, "true"}, 2, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(SelfExe, tc.args...)
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != tc.code || !strings.Contains(string(out), tc.says) {
				t.Errorf("%q: exit %v, output %q; want status %d saying %q", tc.args, cmd.ProcessState, out, tc.code, tc.says)
			}
		})
	}
	if got := ExecTTYArgs("bin", "d", []string{"sh"}); !slices.Equal(got, []string{"bin", execCommand, "d", ttyFlag, "--", "sh"}) {
		t.Errorf("ExecTTYArgs = %q", got)
	}
}
