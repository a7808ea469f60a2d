package cgroups

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPathsCoverTheControllersInUse(t *testing.T) {
	l := Layout{
		V1: map[string]string{"memory": "/cg/memory", "cpu": "/cg/cpu,cpuacct", "cpuacct": "/cg/cpu,cpuacct", "blkio": "/cg/blkio"},
		V2: "/cg/unified",
	}
	p := l.Paths("/cairn/s/c")
	want := Paths{
		V1: map[string]string{"memory": "/cg/memory/cairn/s/c", "cpu": "/cg/cpu,cpuacct/cairn/s/c", "cpuacct": "/cg/cpu,cpuacct/cairn/s/c"},
		V2: "/cg/unified/cairn/s/c",
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Paths = %+v, want %+v", p, want)
	}
	// The names are part of spec.json, which running shims share with
	// agents of other versions.
	raw, _ := json.Marshal(p)
	if !strings.Contains(string(raw), `"v1":{`) || !strings.Contains(string(raw), `"v2":"/cg/unified/cairn/s/c"`) {
		t.Errorf("Paths in JSON: %s, want keys v1 and v2", raw)
	}
}

// TestApplyWritesLimits applies limits to cgroup directories faked with
// plain files: the formats differ between v1 and v2, and zero means no
// limit.
func TestApplyWritesLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v2       bool
		existing []string // files the kernel would show
		res      Resources
		want     map[string]string
	}{
		{"v1 limits", false, []string{"memory.memsw.limit_in_bytes"},
			Resources{MemoryLimit: 32 << 20, CPUPeriod: 100000, CPUQuota: 50000, CPUShares: 512},
			map[string]string{
				"memory/memory.limit_in_bytes": "33554432", "memory/memory.memsw.limit_in_bytes": "33554432",
				"cpu/cpu.cfs_period_us": "100000", "cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.shares": "512",
			}},
		{"v1 unlimited", false, nil, Resources{},
			map[string]string{"memory/memory.limit_in_bytes": "-1", "cpu/cpu.cfs_quota_us": "-1"}},
		{"v2 limits", true, []string{"memory.max", "cpu.max"},
			Resources{MemoryLimit: 32 << 20, CPUQuota: 50000, CPUShares: 512},
			map[string]string{"v2/memory.max": "33554432", "v2/cpu.max": "50000 100000", "v2/cpu.weight": "20"}},
		{"v2 unlimited", true, []string{"memory.max", "cpu.max"}, Resources{},
			map[string]string{"v2/memory.max": "max", "v2/cpu.max": "max 100000"}},
		{"v2 without controllers", true, nil, Resources{MemoryLimit: 1 << 20}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var p Paths
			if tc.v2 {
				p.V2 = filepath.Join(root, "v2")
			} else {
				p.V1 = map[string]string{"memory": filepath.Join(root, "memory"), "cpu": filepath.Join(root, "cpu")}
			}
			if err := p.Create(); err != nil {
				t.Fatal(err)
			}
			for _, d := range p.dirs() {
				for _, f := range tc.existing {
					if err := os.WriteFile(filepath.Join(d, f), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := p.Apply(tc.res); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					raw, _ := os.ReadFile(path)
					if len(raw) > 0 {
						rel, _ := filepath.Rel(root, path)
						got[rel] = string(raw)
					}
				}
				return nil
			})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("wrote %v, want %v", got, tc.want)
			}
		})
	}
}

func TestProcessesAndOOMKillsAreReadFromTheCgroup(t *testing.T) {
	root := t.TempDir()
	p := Paths{V1: map[string]string{"memory": filepath.Join(root, "memory"), "pids": filepath.Join(root, "pids")}}
	if err := p.Create(); err != nil {
		t.Fatal(err)
	}
	if err := p.AddProcess(42); err != nil {
		t.Fatal(err)
	}
	if got := p.PIDs(); !reflect.DeepEqual(got, []int{42}) {
		t.Errorf("PIDs = %v, want [42]", got)
	}
	if err := os.WriteFile(filepath.Join(root, "memory", "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := p.OOMKills(); got != 3 {
		t.Errorf("OOMKills = %d, want 3", got)
	}
}

func TestProcsFilesNameEveryHierarchy(t *testing.T) {
	p := Paths{V1: map[string]string{"pids": "/cg/pids/x", "memory": "/cg/memory/x", "unknown": "/cg/unknown/x"}, V2: "/cg/unified/x"}
	want := []string{"/cg/memory/x/cgroup.procs", "/cg/pids/x/cgroup.procs", "/cg/unified/x/cgroup.procs"}
	if got := p.ProcsFiles(); !reflect.DeepEqual(got, want) {
		t.Errorf("ProcsFiles = %v, want %v", got, want)
	}
}
