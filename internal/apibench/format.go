package apibench

import (
	"fmt"
	"time"
)

// FormatDuration prints a duration with about three significant digits in
// the unit that suits it, so that table columns stay short and comparable.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	// The bounds sit half a unit below the next one, so that 999.9ms
	// prints as 1.00s rather than 1000ms.
	case d < time.Millisecond-time.Microsecond/2:
		return threeDigits(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second-time.Millisecond/2:
		return threeDigits(float64(d)/float64(time.Millisecond)) + "ms"
	default:
		return threeDigits(d.Seconds()) + "s"
	}
}

// FormatBytes prints a memory size in MiB, the unit the targets use.
func FormatBytes(b uint64) string {
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// threeDigits formats v with three significant digits and never in
// exponent form, which %g would use for 999.9.
func threeDigits(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
