package storebench

import (
	"testing"
	"time"
)

func TestJitterStaysBetweenHalfAndAllOfTheTimeout(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
	}{
		{"default", DefaultWriteTimeout},
		{"one nanosecond", time.Nanosecond},
		{"odd", 3 * time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 1000 {
				if got := jitter(tt.d); got < tt.d/2 || got > tt.d || got <= 0 {
					t.Fatalf("jitter(%v) = %v, want within [%v, %v]", tt.d, got, tt.d/2, tt.d)
				}
			}
		})
	}
}
