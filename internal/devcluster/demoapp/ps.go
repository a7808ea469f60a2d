package demoapp

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// PS prints the processes the demo program sees, "PID COMMAND" per line
// in PID order: the image has no shell nor ps, and this shows what a
// container sees of its pod, e.g. from `kubectl debug --target`.
func PS(proc string, w io.Writer) error {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return err
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("%s/%d/cmdline", proc, pid))
		if err != nil {
			continue // exited meanwhile
		}
		cmd := strings.TrimSpace(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '})))
		if _, err := fmt.Fprintf(w, "%d %s\n", pid, cmd); err != nil {
			return err
		}
	}
	return nil
}
