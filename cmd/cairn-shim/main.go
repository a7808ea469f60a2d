// Command cairn-shim is the embedded container runtime's helper binary:
// the container shim and the exec helper. The agent
// runs it instead of re-executing its own much larger binary, whose
// package initialisation (Kubernetes clients, kubectl, etcd) would
// otherwise cost every container start about a fifth of a second.
//
// It runs for every container start, so it imports
// only the runtime's helper package, free of the agent's dependencies
// and of net/http; TestBinaryStaysLean keeps it that way.
package main

import (
	"fmt"
	"os"

	"cairn/node/runtime/embedded/helper"
)

func main() {
	helper.MaybeRun()
	fmt.Fprintln(os.Stderr, "cairn-shim: this is an internal helper of the cairn agent's container runtime; it is not run by hand")
	os.Exit(2)
}
