package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// leanPrefixes are the only packages outside the standard library the
// helper binary may link: its own and golang.org/x/sys. Everything else
// the agent uses (grpc, protobuf, k8s.io, go-containerregistry, logrus,
// netlink...) adds package initialisation to every container start.
func leanPrefixes() []string {
	return []string{"cairn/cmd/cairn-helper", "cairn/node/runtime/embedded/helper", "cairn/node/runtime/embedded/cgroups", "cairn/internal/rootfs", "cairn/internal/nsthread", "cairn/internal/atomicfile", "golang.org/x/sys/"}
}

// TestBinaryStaysLean fails when cairn-helper links a package beyond
// its allowed few, naming the package that imports it, so that the
// helper every exec and shared PID namespace starts does not grow back
// into the agent.
func TestBinaryStaysLean(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the binary's packages with")
	}
	// Each line: a package outside the standard library, then the
	// packages it imports.
	list := exec.Command(gobin, "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}} {{join .Imports " "}}{{end}}`, ".")
	list.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderrOf(err))
	}
	importers := map[string][]string{}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkgs = append(pkgs, f[0])
		for _, imp := range f[1:] {
			importers[imp] = append(importers[imp], f[0])
		}
	}
	if !slices.Contains(pkgs, "cairn/node/runtime/embedded/helper") {
		t.Fatalf("go list found no helper package among %q: is this the cairn-helper command?", pkgs)
	}
	lean := func(p string) bool {
		return slices.ContainsFunc(leanPrefixes(), func(prefix string) bool { return strings.HasPrefix(p, prefix) })
	}
	// Name where the extra packages come in: the ones a lean package
	// imports. The rest follow from them.
	var extra, entries []string
	for _, p := range pkgs {
		if lean(p) {
			continue
		}
		extra = append(extra, p)
		for _, by := range importers[p] {
			if lean(by) {
				entries = append(entries, by+" imports "+p)
			}
		}
	}
	// Of the standard library, the heavy network stacks: their package
	// initialisation (and CPU feature probes, slow in a VM) would cost
	// each helper start about half a millisecond.
	all := exec.Command(gobin, "list", "-deps", ".")
	all.Env = list.Env
	raw, err := all.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderrOf(err))
	}
	for _, p := range strings.Fields(string(raw)) {
		if p == "net/http" || p == "crypto/tls" {
			t.Errorf("cairn-helper links %s, whose initialisation every helper start would pay", p)
		}
	}
	if len(extra) > 0 {
		t.Errorf("cairn-helper links %d packages beyond the standard library and golang.org/x/sys, which every helper start would initialise:\n\t%s\nall of them: %s",
			len(extra), strings.Join(entries, "\n\t"), strings.Join(extra, " "))
	}
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}
