package storebench

import (
	"slices"
	"time"
)

// gap is a stretch of time in which no write was acknowledged.
type gap struct {
	From, To time.Time
}

// Length is how long the gap lasted.
func (g gap) Length() time.Duration { return g.To.Sub(g.From) }

// longestGap finds the longest stretch between consecutive acknowledgements
// in acks (from all writers, in any order), counting the stretch from the
// last acknowledgement to end: a cluster that never recovers must show a long
// gap, not the short ones before it died. acks is sorted in place.
//
// For acks at 0, 10, 15 and 40 ms and end at 45 ms, the gaps are 10, 5, 25
// and 5 ms, and the longest is 15→40 ms. With no acks at all there is no
// reference point, and the zero gap is returned.
func longestGap(acks []time.Time, end time.Time) gap {
	if len(acks) == 0 {
		return gap{}
	}
	slices.SortFunc(acks, func(a, b time.Time) int { return a.Compare(b) })
	longest := gap{From: acks[0], To: acks[0]}
	for i := 1; i <= len(acks); i++ {
		to := end
		if i < len(acks) {
			to = acks[i]
		}
		if g := (gap{From: acks[i-1], To: to}); g.Length() > longest.Length() {
			longest = g
		}
	}
	return longest
}
