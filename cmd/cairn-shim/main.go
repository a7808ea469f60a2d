// Command cairn-shim is the embedded container runtime's helper binary:
// the container shim, the container init and the exec helper. The agent
// runs it instead of re-executing its own much larger binary, whose
// package initialisation (Kubernetes clients, kubectl, etcd) would
// otherwise cost every container start about a fifth of a second. It is
// also the program of `cairn dev`'s demo image (`__demo-http`).
package main

import (
	"fmt"
	"os"

	"cairn/node/runtime/embedded"
)

func main() {
	embedded.MaybeRunInit()
	if len(os.Args) > 1 && os.Args[1] == demoCommand {
		os.Exit(runDemo(os.Args[2:]))
	}
	fmt.Fprintln(os.Stderr, "cairn-shim: this is an internal helper of the cairn agent's container runtime; it is not run by hand")
	os.Exit(2)
}
