package volumes

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// OverLimit reports the first emptyDir on disk of pod that uses more
// than its sizeLimit, with the message of the eviction it calls for.
// Memory-backed ones need no check: their tmpfs cannot grow past it.
func (m *Manager) OverLimit(pod *corev1.Pod) (string, bool) {
	for _, v := range pod.Spec.Volumes {
		e := v.EmptyDir
		if e == nil || e.SizeLimit == nil || e.Medium == corev1.StorageMediumMemory {
			continue
		}
		used := DiskUsage(m.Dir(pod.UID, "empty-dir", v.Name))
		if used > e.SizeLimit.Value() {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q.", v.Name, e.SizeLimit.String()), true
		}
	}
	return "", false
}

// DiskUsage is the space the files under dir take, as du counts it.
func DiskUsage(dir string) int64 {
	var total int64
	seen := map[uint64]bool{}
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil // a hard link counts once
			}
			seen[st.Ino] = true
			total += st.Blocks * 512
			return nil
		}
		total += info.Size()
		return nil
	})
	return total
}
