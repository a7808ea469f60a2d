// Command cairn is the single Cairn binary: servers, agents, tooling and the
// embedded kubectl and etcdctl.
package main

import (
	"fmt"
	"os"

	"cairn/node/runtime/embedded"
)

func main() {
	embedded.MaybeRunInit()
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
