package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestPicksAreDistinctAndBelowTheEphemeralRange(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		addrs, err := Free(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if seen[a] {
				t.Fatalf("%s handed out twice", a)
			}
			seen[a] = true
			_, p, _ := net.SplitHostPort(a)
			if port, _ := strconv.Atoi(p); port >= 32768 {
				t.Fatalf("%s is in the kernel's ephemeral range", a)
			}
		}
	}
}
