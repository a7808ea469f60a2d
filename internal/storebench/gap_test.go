package storebench

import (
	"testing"
	"time"
)

func TestLongestGapBetweenAcknowledgedWrites(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(msecs ...int) []time.Time {
		ts := make([]time.Time, len(msecs))
		for i, m := range msecs {
			ts[i] = t0.Add(ms(m))
		}
		return ts
	}
	tests := []struct {
		name     string
		acks     []time.Time
		end      int
		from, to int
		zero     bool
	}{
		{name: "no acks has no reference point", acks: nil, end: 100, zero: true},
		{name: "one ack: the gap runs to the end", acks: at(10), end: 100, from: 10, to: 100},
		{name: "gap in the middle", acks: at(0, 10, 15, 40), end: 45, from: 15, to: 40},
		{name: "acks from several writers out of order", acks: at(40, 0, 15, 10), end: 45, from: 15, to: 40},
		{name: "never recovered: the tail is longest", acks: at(0, 1, 2, 3), end: 2000, from: 3, to: 2000},
		{name: "simultaneous acks", acks: at(5, 5, 5, 6), end: 6, from: 5, to: 6},
		{name: "first of equal gaps wins", acks: at(0, 10, 20), end: 20, from: 0, to: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := longestGap(tt.acks, t0.Add(ms(tt.end)))
			if tt.zero {
				if g != (gap{}) {
					t.Errorf("longestGap = %v..%v, want the zero gap", g.From, g.To)
				}
				return
			}
			want := gap{From: t0.Add(ms(tt.from)), To: t0.Add(ms(tt.to))}
			if g != want {
				t.Errorf("longestGap = %v..%v, want %v..%v",
					g.From.Sub(t0), g.To.Sub(t0), want.From.Sub(t0), want.To.Sub(t0))
			}
			if g.Length() != ms(tt.to-tt.from) {
				t.Errorf("Length = %v, want %v", g.Length(), ms(tt.to-tt.from))
			}
		})
	}
}
