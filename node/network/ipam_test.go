package network

import (
	"net/netip"
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
