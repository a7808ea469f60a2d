package embedded

import (
	"fmt"
	"os"
)

// Hidden first arguments that turn the agent's binary into one of the
// runtime's helper processes.
const (
	shimCommand = "__container-shim"
	initCommand = "__container-init"
	execCommand = "__container-exec"
)

// selfExe is the binary the helpers run: the agent's own, even if the
// file was replaced or deleted since it started.
const selfExe = "/proc/self/exe"

// MaybeRunInit turns the process into a container shim, init or exec
// helper when it was started as one (by this package, re-executing its
// own binary), and never returns then. Otherwise it returns at once.
// The agent's main calls it first thing, and so does the TestMain of
// any test package that starts containers:
//
//	func TestMain(m *testing.M) {
//		embedded.MaybeRunInit()
//		os.Exit(m.Run())
//	}
func MaybeRunInit() {
	if len(os.Args) < 2 {
		return
	}
	var code int
	switch os.Args[1] {
	case shimCommand:
		code = runShim(os.Args[2:])
	case initCommand:
		code = runInit(os.Args[2:])
	case execCommand:
		code = runExec(os.Args[2:])
	default:
		return
	}
	os.Exit(code)
}

// helperUsage reports a helper started with the wrong arguments: only
// this package starts them.
func helperUsage(name string, args []string) int {
	fmt.Fprintf(os.Stderr, "%s: unexpected arguments %q (this is an internal command of the container runtime)\n", name, args)
	return 2
}
