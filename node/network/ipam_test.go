package network

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestIPAMHandsOutEachAddressOnce(t *testing.T) {
	a := ipam{dir: t.TempDir()}
	prefix := netip.MustParsePrefix("10.1.0.0/29") // .2 to .6 usable
	steps := []struct {
		op, owner string
		want      string // address, or "error"
	}{
		{"allocate", "a", "10.1.0.2"},
		{"allocate", "b", "10.1.0.3"},
		{"allocate", "a", "10.1.0.2"}, // idempotent per owner
		{"release", "a", ""},
		{"allocate", "c", "10.1.0.4"}, // a freed address is reused last
		{"allocate", "d", "10.1.0.5"},
		{"allocate", "e", "10.1.0.6"},
		{"allocate", "f", "10.1.0.2"}, // wraps around, skipping the gateway
		{"allocate", "g", "error"},    // .7 is the broadcast address
		{"release", "b", ""},
		{"allocate", "g", "10.1.0.3"},
	}
	for i, s := range steps {
		switch s.op {
		case "release":
			if err := a.release(s.owner); err != nil {
				t.Fatalf("step %d: release %s: %v", i, s.owner, err)
			}
		case "allocate":
			got, err := a.allocate(prefix, s.owner)
			if s.want == "error" {
				if err == nil {
					t.Fatalf("step %d: allocate %s = %s, want exhaustion", i, s.owner, got)
				}
				continue
			}
			if err != nil || got.String() != s.want {
				t.Fatalf("step %d: allocate %s = %s, %v; want %s", i, s.owner, got, err, s.want)
			}
		}
	}
	if err := a.releaseIf(func(owner string) bool { return owner != "c" }); err != nil {
		t.Fatal(err)
	}
	inUse, err := a.allocations()
	if err != nil || len(inUse) != 1 || inUse[netip.MustParseAddr("10.1.0.4")] != "c" {
		t.Errorf("after releasing all but c: %v, %v", inUse, err)
	}
}

func TestIPAMFollowsTheFilesOnDisk(t *testing.T) {
	dir := t.TempDir()
	a := ipam{dir: dir}
	prefix := netip.MustParsePrefix("10.1.0.0/29") // .2 to .6 usable
	if got, err := a.allocate(prefix, "a"); err != nil || got.String() != "10.1.0.2" {
		t.Fatalf("allocate a = %v, %v", got, err)
	}
	// Files the cache has not seen (an earlier agent's, say) count, and
	// a file gone frees its address.
	if err := os.WriteFile(filepath.Join(dir, "10.1.0.3"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := a.allocate(prefix, "x"); err != nil || got.String() != "10.1.0.3" {
		t.Errorf("allocate x = %v, %v; want the address its file names", got, err)
	}
	if got, err := a.allocate(prefix, "b"); err != nil || got.String() != "10.1.0.4" {
		t.Errorf("allocate b = %v, %v; want the next free address", got, err)
	}
	if err := os.Remove(filepath.Join(dir, "10.1.0.2")); err != nil {
		t.Fatal(err)
	}
	inUse, err := a.allocations()
	if err != nil {
		t.Fatal(err)
	}
	if _, held := inUse[netip.MustParseAddr("10.1.0.2")]; held || len(inUse) != 2 {
		t.Errorf("in use %v, want 10.1.0.3 and 10.1.0.4 only", inUse)
	}
	if got, err := a.allocate(prefix, "a"); err != nil || got.String() != "10.1.0.5" {
		t.Errorf("allocate a again = %v, %v; want a new address, its file being gone", got, err)
	}
}

func TestIPAMNeverHandsOutAnAddressTakenOnDisk(t *testing.T) {
	dir := t.TempDir()
	a := ipam{dir: dir}
	prefix := netip.MustParsePrefix("10.1.0.0/29") // .2 to .6 usable
	if got, err := a.allocate(prefix, "a"); err != nil || got.String() != "10.1.0.2" {
		t.Fatalf("allocate a = %v, %v", got, err)
	}
	// Written behind the cache's back, for another owner: skipped.
	if err := os.WriteFile(filepath.Join(dir, "10.1.0.3"), []byte("y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := a.allocate(prefix, "z"); err != nil || got.String() != "10.1.0.4" {
		t.Errorf("allocate z = %v, %v; want 10.1.0.4, 10.1.0.3 being y's on disk", got, err)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "10.1.0.3")); err != nil || string(raw) != "y\n" {
		t.Errorf("y's file reads %q, %v; want it untouched", raw, err)
	}
	inUse, err := a.allocations()
	if err != nil || inUse[netip.MustParseAddr("10.1.0.3")] != "y" || len(inUse) != 3 {
		t.Errorf("in use %v, %v; want a, y and z", inUse, err)
	}
}

func TestIPAMContinuesAfterTheLastAddressAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	prefix := netip.MustParsePrefix("10.1.0.0/24")
	a := ipam{dir: dir}
	for _, owner := range []string{"a", "b", "c"} {
		if _, err := a.allocate(prefix, owner); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.release("a"); err != nil {
		t.Fatal(err)
	}
	// A new agent on the same directory first frees the addresses of
	// sandboxes gone meanwhile, then hands out 10.1.0.5, not the address
	// a released: "last" is read back, padding and all.
	restarted := ipam{dir: dir}
	if err := restarted.releaseIf(func(owner string) bool { return owner == "gone" }); err != nil {
		t.Fatal(err)
	}
	if got, err := restarted.allocate(prefix, "d"); err != nil || got.String() != "10.1.0.5" {
		t.Errorf("allocate d after a restart = %v, %v; want 10.1.0.5", got, err)
	}
	if got, err := restarted.allocate(prefix, "b"); err != nil || got.String() != "10.1.0.3" {
		t.Errorf("allocate b after a restart = %v, %v; want its address, 10.1.0.3", got, err)
	}
}

// A burst of sandboxes allocates at once: each gets its own address, and
// each file names its owner.
func TestIPAMConcurrentAllocationsAreDistinct(t *testing.T) {
	dir := t.TempDir()
	a := ipam{dir: dir}
	prefix := netip.MustParsePrefix("10.1.0.0/24")
	const n = 100
	got := make([]netip.Addr, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = a.allocate(prefix, fmt.Sprintf("sb%d", i)) })
	}
	wg.Wait()
	seen := map[netip.Addr]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("allocate sb%d: %v", i, errs[i])
		}
		if j, dup := seen[got[i]]; dup {
			t.Fatalf("sb%d and sb%d both got %s", j, i, got[i])
		}
		seen[got[i]] = i
		raw, err := os.ReadFile(filepath.Join(dir, got[i].String()))
		if err != nil || string(raw) != fmt.Sprintf("sb%d", i) {
			t.Errorf("%s's file reads %q, %v; want sb%d", got[i], raw, err, i)
		}
	}
	inUse, err := (&ipam{dir: dir}).allocations()
	if err != nil || len(inUse) != n {
		t.Errorf("a fresh read of the directory finds %d addresses, %v; want %d", len(inUse), err, n)
	}
}
