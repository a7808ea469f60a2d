package nodeipam

import (
	"net"
	"testing"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, c, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCIDRSetAllocatesDistinctSubnetsUntilFull(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster string
		mask    int
		want    []string
	}{
		{"ipv4 /24 of a /22", "10.244.0.0/22", 24, []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24", "10.244.3.0/24"}},
		{"ipv4 /26 of a /24", "192.168.7.0/24", 26, []string{"192.168.7.0/26", "192.168.7.64/26", "192.168.7.128/26", "192.168.7.192/26"}},
		{"ipv6 /64 of a /63", "fd00:10::/63", 64, []string{"fd00:10::/64", "fd00:10:0:1::/64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newCIDRSet(mustCIDR(t, tc.cluster), tc.mask)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				got, err := s.allocate()
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != want {
					t.Errorf("allocated %s, want %s", got, want)
				}
			}
			if _, err := s.allocate(); err != errFull {
				t.Errorf("allocate on a full set = %v, want errFull", err)
			}
			s.release(mustCIDR(t, tc.want[1]))
			if got, err := s.allocate(); err != nil || got.String() != tc.want[1] {
				t.Errorf("after release, allocate = %v, %v; want %s", got, err, tc.want[1])
			}
		})
	}
}

func TestCIDRSetOccupy(t *testing.T) {
	s, err := newCIDRSet(mustCIDR(t, "10.0.0.0/23"), 24)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cidr string
		ok   bool
	}{
		{"10.0.1.0/24", true},
		{"10.0.1.0/24", true}, // twice is fine
		{"10.0.2.0/24", false},
		{"10.0.0.0/25", false},
	} {
		if got := s.occupy(mustCIDR(t, tc.cidr)); got != tc.ok {
			t.Errorf("occupy(%s) = %v, want %v", tc.cidr, got, tc.ok)
		}
	}
	if got, _ := s.allocate(); got.String() != "10.0.0.0/24" {
		t.Errorf("allocate = %v, want the one subnet left", got)
	}
	if s.free != 0 {
		t.Errorf("free = %d, want 0", s.free)
	}
}

func TestNewCIDRSetRefusesBadMasks(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		mask    int
	}{
		{"10.0.0.0/24", 16},
		{"10.0.0.0/8", 30},
		{"10.0.0.0/24", 33},
	} {
		if _, err := newCIDRSet(mustCIDR(t, tc.cluster), tc.mask); err == nil {
			t.Errorf("newCIDRSet(%s, /%d) succeeded", tc.cluster, tc.mask)
		}
	}
}
