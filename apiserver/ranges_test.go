package apiserver

import (
	"strings"
	"testing"
)

func TestServiceCIDR(t *testing.T) {
	tests := []struct {
		cidr       string
		size       uint64
		first, end string // first and last usable IPs
		err        string
	}{
		{cidr: "10.96.0.0/12", size: 1<<20 - 2, first: "10.96.0.1", end: "10.111.255.254"},
		{cidr: "10.0.0.0/24", size: 254, first: "10.0.0.1", end: "10.0.0.254"},
		{cidr: "10.0.0.0/30", size: 2, first: "10.0.0.1", end: "10.0.0.2"},
		{cidr: "fd00:10:96::/108", size: 1<<20 - 1, first: "fd00:10:96::1", end: "fd00:10:96::f:ffff"},
		{cidr: "10.0.0.0/8", err: "too large"},
		{cidr: "fd00::/64", err: "too large"},
		{cidr: "10.0.0.0/31", err: "too small"},
		{cidr: "10.96.0.1/12", err: "host bits set: use 10.96.0.0/12"},
		{cidr: "nonsense", err: "service CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			r, err := parseServiceCIDR(tt.cidr)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.size() != tt.size || r.member(0) != tt.first || r.member(r.size()-1) != tt.end {
				t.Fatalf("size %d first %s last %s", r.size(), r.member(0), r.member(r.size()-1))
			}
			for _, off := range []uint64{0, 1, 255, 256, r.size() - 1} {
				if off >= r.size() {
					continue
				}
				if got, ok := r.offset(r.member(off)); !ok || got != off {
					t.Errorf("offset(member(%d)) = %d, %v", off, got, ok)
				}
			}
		})
	}
}

func TestOffsetsOutsideTheRange(t *testing.T) {
	r, err := parseServiceCIDR("10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"10.96.0.0", "10.111.255.255", "10.112.0.1", "10.95.255.255", "::ffff:10.96.0.5", "fd00::1", "x"} {
		if off, ok := r.offset(ip); ok {
			t.Errorf("%s is at offset %d, want outside the range", ip, off)
		}
	}
	ports := portRange{base: nodePortBase, n: nodePortSize}
	if ports.String() != "30000-32767" {
		t.Fatalf("node port range %s", ports)
	}
	for _, p := range []string{"29999", "32768", "0", "-1", "http"} {
		if _, ok := ports.offset(p); ok {
			t.Errorf("port %s is in the range", p)
		}
	}
	if off, ok := ports.offset("32767"); !ok || ports.member(off) != "32767" {
		t.Errorf("port 32767: offset %d, %v", off, ok)
	}
}

func TestStaticBand(t *testing.T) {
	tests := []struct {
		name                   string
		size, div, limit, want uint64
	}{
		{"tinyRangeIsAllStatic", 10, 16, 256, 10},
		{"atLeast16", 100, 16, 256, 16},
		{"aSixteenth", 1000, 16, 256, 62},
		{"atMostTheLimit", 1 << 20, 16, 256, 256},
		{"nodePorts", nodePortSize, 32, 128, 86},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := staticBand(tt.size, tt.div, tt.limit); got != tt.want {
				t.Fatalf("staticBand(%d) = %d, want %d", tt.size, got, tt.want)
			}
		})
	}
}

func TestWalkVisitsEachOffsetOnce(t *testing.T) {
	seen := map[uint64]int{}
	if walk(5, 12, func(off uint64) bool { seen[off]++; return false }) {
		t.Fatal("walk reported success though try never succeeded")
	}
	if len(seen) != 7 {
		t.Fatalf("visited %v, want 5..11 once each", seen)
	}
	for off, n := range seen {
		if off < 5 || off >= 12 || n != 1 {
			t.Fatalf("visited %v, want 5..11 once each", seen)
		}
	}
	if walk(3, 3, func(uint64) bool { return true }) {
		t.Fatal("an empty band had a member")
	}
}
