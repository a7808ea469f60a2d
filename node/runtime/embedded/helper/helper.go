package helper

import (
	"fmt"
	"os"
)

// Hidden first arguments of the runtime's helper processes: shimCommand
// runs the container shim (the C program of node/runtime/embedded/shim),
// execCommand the exec helper of a binary calling MaybeRun.
const (
	shimCommand = "__container-shim"
	execCommand = "__container-exec"
)

// SelfExe is the running binary, even if the file was replaced or
// deleted since it started: the fallback helper binary of the agent.
const SelfExe = "/proc/self/exe"

// Env returns the environment of the runtime's helpers: nothing but one
// P for the Go scheduler of the exec helper and the pod init. A Go
// process sizing itself to the machine reads its cgroup CPU limits and
// starts a thread per CPU, which these helpers have no use for. The C
// shim ignores it. Commands in the container never see it: they get the
// spec's environment.
func Env() []string { return []string{"GOMAXPROCS=1"} }

// MaybeRun turns the process into an exec helper or pod init when it
// was started as one, and never returns then. Otherwise it
// returns at once. The main of any binary the runtime may run as its
// helper calls it first thing.
func MaybeRun() {
	if len(os.Args) < 2 {
		return
	}
	var code int
	switch os.Args[1] {
	case execCommand:
		code = runExec(os.Args[2:])
	case podInitCommand:
		code = runPodInit(os.Args[2:])
	default:
		return
	}
	os.Exit(code)
}

// ExecArgs returns the argv that makes binary the exec helper running
// cmd in the container whose state is in dir. The helper exits with
// cmd's status, or ExitCannotExec or ExitNotFound.
func ExecArgs(binary, dir string, cmd []string) []string {
	return append([]string{binary, execCommand, dir, "--"}, cmd...)
}

// ttyFlag, between the exec helper's DIR and "--", runs the command on
// the terminal the helper was given as stdin, stdout and stderr. Old
// agents never pass it, so the helper still accepts their argv.
const ttyFlag = "--tty"

// ExecTTYArgs is ExecArgs for a command run on a terminal: the helper's
// stdin, stdout and stderr must be the terminal's slave side, and the
// command gets it as its controlling terminal, in a session of its own.
// A helper older than this argv refuses it with a usage error.
func ExecTTYArgs(binary, dir string, cmd []string) []string {
	return append([]string{binary, execCommand, dir, ttyFlag, "--"}, cmd...)
}

// usage reports a helper started with the wrong arguments: only the
// runtime starts them.
func usage(name string, args []string) int {
	fmt.Fprintf(os.Stderr, "%s: unexpected arguments %q (this is an internal command of the container runtime)\n", name, args)
	return 2
}
