package embedded

import (
	"errors"
	"os"
	"path/filepath"

	"cairn/node/runtime/embedded/helper"
)

// HelperName is the name of the small Go helper binary the runtime runs
// as exec helper and pod init (see cmd/cairn-helper). Re-executing the
// agent's own binary works as well, but its package initialisation
// costs each start a fifth of a second and a hundred megabytes, which
// many simultaneous starts cannot afford.
const HelperName = "cairn-helper"

// ShimName is the name of the container shim, a small static C program
// (node/runtime/embedded/shim) that `make build` builds beside the
// agent: every container start runs it once, and a Go process would
// cost each start several milliseconds of CPU just to start.
const ShimName = "cairn-shim"

// ErrNoShim is the error of a container start, or of an agent's, without
// the shim.
var ErrNoShim = errors.New("the container shim " + ShimName + " is missing: build it with `make build` and install it beside the agent's binary")

// FindShim returns the shim beside the running executable, or "".
func FindShim() string { return besideExecutable(ShimName) }

// besideExecutable returns the executable file name next to the running
// executable (installed and built together, so of the same version), or
// "". $PATH is not searched: a helper of another version could disagree
// with the agent on the state it shares.
func besideExecutable(name string) string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(self), name)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return ""
	}
	return p
}

// findHelper returns the helper binary to run: HelperName next to the
// running executable, else the running executable itself, which
// MaybeRunInit turns into a helper.
func findHelper() string {
	if p := besideExecutable(HelperName); p != "" {
		return p
	}
	return helper.SelfExe
}

// MaybeRunInit turns the process into an exec helper or pod init when
// it was started as one (by this package, re-executing its own binary),
// and never returns then. Otherwise it returns at once. The agent's
// main calls it first thing, and so does the TestMain of any test
// package that starts containers:
//
//	func TestMain(m *testing.M) {
//		embedded.MaybeRunInit()
//		os.Exit(m.Run())
//	}
//
// The small helper binary calls helper.MaybeRun instead, which this is.
func MaybeRunInit() { helper.MaybeRun() }
