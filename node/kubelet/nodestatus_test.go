package kubelet

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestDiskPressureSaysWhyAndIsLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	k := &Kubelet{
		cfg: Config{RootDir: "/var/lib/cairn/agent", MaxPods: 110, NodeIP: net.ParseIP("10.0.0.11"),
			EvictionDiskFreeFraction: 0.10, EvictionMemoryAvailable: 100 << 20, EvictionPIDFreeFraction: 0.05},
		log: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	o := nodeObservation{Now: time.Now(), DiskTotal: 1000, DiskFree: 95, MemAvailable: 1 << 30, Procs: 10, PIDMax: 1000}
	full := k.nodeStatus(o, corev1.NodeStatus{})
	var disk corev1.NodeCondition
	for _, c := range full.Conditions {
		if c.Type == corev1.NodeDiskPressure {
			disk = c
		}
	}
	if disk.Status != corev1.ConditionTrue || !strings.Contains(disk.Message, "/var/lib/cairn/agent has 9.5% free") ||
		!strings.Contains(disk.Message, "--eviction-disk-free") {
		t.Fatalf("DiskPressure = %+v, want true, naming the filesystem, its free space and the flag", disk)
	}
	k.logPressure(corev1.NodeStatus{}, full)
	k.logPressure(full, full)
	if n := strings.Count(logs.String(), "node under pressure"); n != 1 {
		t.Errorf("%d pressure warnings logged, want 1 for the change:\n%s", n, logs.String())
	}
	o.DiskFree = 500
	for _, c := range k.nodeStatus(o, full).Conditions {
		if c.Type == corev1.NodeDiskPressure && c.Status != corev1.ConditionFalse {
			t.Errorf("with half the disk free, DiskPressure = %+v", c)
		}
	}
}
