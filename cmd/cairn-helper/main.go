// Command cairn-helper is the embedded container runtime's Go helper
// binary: the exec helper and the init of a pod's shared PID namespace.
// The agent runs it instead of re-executing its own much larger binary,
// whose package initialisation (Kubernetes clients, kubectl, etcd)
// would otherwise cost every exec about a fifth of a second. (The
// container shim, which every container start runs, is cairn-shim, in
// C: see node/runtime/embedded/shim.)
//
// It imports only the runtime's helper package, free of the agent's
// dependencies and of net/http; TestBinaryStaysLean keeps it that way.
package main

import (
	"fmt"
	"os"

	"cairn/node/runtime/embedded/helper"
)

func main() {
	helper.MaybeRun()
	fmt.Fprintln(os.Stderr, "cairn-helper: this is an internal helper of the cairn agent's container runtime; it is not run by hand")
	os.Exit(2)
}
