// Package benchstat reads the figures benchmarks report per operation
// beside their latencies: the CPU time the whole machine spent, steadier
// on a shared or virtual machine than any latency, and the store's writes.
package benchstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Busy is the CPU time all cores have spent on anything but idling since
// boot, from /proc/stat's first line: user, nice, system, irq and
// softirq. Steal, other machines' work on this host, is left out.
func Busy() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("benchstat: %w", err)
	}
	return parse(string(raw))
}

func parse(stat string) (time.Duration, error) {
	line, _, _ := strings.Cut(stat, "\n")
	// cpu user nice system idle iowait irq softirq steal ...
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, fmt.Errorf("benchstat: /proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for i, f := range fields[1:8] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("benchstat: /proc/stat: %q: %w", line, err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
