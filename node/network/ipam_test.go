package network

import (
	"net/netip"
	"os"
	"path/filepath"
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
