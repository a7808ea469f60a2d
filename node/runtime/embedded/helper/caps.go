package helper

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LastCap returns the highest capability number the kernel knows.
func LastCap() int {
	raw, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 40
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 40
	}
	return n
}

// dropBoundingCaps removes every capability outside keep from the
// calling thread's bounding set, so that nothing the thread execs can
// ever hold them. The caller has locked the goroutine to its thread.
func dropBoundingCaps(keep []int) error {
	last := LastCap()
	for c := 0; c <= last; c++ {
		if slices.Contains(keep, c) {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d: %w", c, err)
		}
	}
	return nil
}
