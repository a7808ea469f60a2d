// Command cairn-shim is the embedded container runtime's helper binary:
// the container shim, the container init and the exec helper. The agent
// runs it instead of re-executing its own much larger binary, whose
// package initialisation (Kubernetes clients, kubectl, etcd) would
// otherwise cost every container start about a fifth of a second. It is
// also the program of `cairn dev`'s demo image (`__demo-http`).
//
// It runs several times for every container start, so it imports only
// the runtime's helper package and the demo, both free of the agent's
// dependencies; TestBinaryStaysLean keeps it that way.
package main

import (
	"fmt"
	"os"

	"cairn/node/runtime/embedded/helper"
)

func main() {
	helper.MaybeRun()
	if len(os.Args) > 1 && os.Args[1] == demoCommand {
		os.Exit(runDemo(os.Args[2:]))
	}
	fmt.Fprintln(os.Stderr, "cairn-shim: this is an internal helper of the cairn agent's container runtime; it is not run by hand")
	os.Exit(2)
}
