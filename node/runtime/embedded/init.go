package embedded

import (
	"os"
	"path/filepath"

	"cairn/node/runtime/embedded/helper"
)

// HelperName is the name of the small helper binary the runtime runs as
// container shim, init and exec helper (see cmd/cairn-shim). Re-executing
// the agent's own binary works as well, but its package initialisation
// costs each container start a fifth of a second and a hundred
// megabytes, which many simultaneous starts cannot afford.
const HelperName = "cairn-shim"

// findHelper returns the helper binary to run: HelperName next to the
// running executable (installed and built together, so of the same
// version), else the running executable itself, which MaybeRunInit turns
// into a helper. $PATH is not searched: a helper of another version could
// disagree with the agent on the state it shares.
func findHelper() string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), HelperName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return helper.SelfExe
}

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
//
// The small helper binary calls helper.MaybeRun instead, which this is.
func MaybeRunInit() { helper.MaybeRun() }
