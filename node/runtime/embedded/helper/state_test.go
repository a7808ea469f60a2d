package helper

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestStateFilesOfEarlierAgentsStillRead decodes spec.json and
// state.json as earlier agents and shims wrote them, and checks that
// writing them back loses nothing: an agent upgraded in place must adopt
// the containers its predecessor started, and their shims must read
// what it writes.
func TestStateFilesOfEarlierAgentsStillRead(t *testing.T) {
	for _, tc := range []struct {
		file string
		raw  string
		read func(dir string) (any, error)
	}{
		{"spec.json", `{
  "id": "c1", "args": ["sh", "-c", "sleep 1"], "env": ["PATH=/bin"], "cwd": "/",
  "uid": 1000, "gid": 1000, "groups": [10], "hostname": "pod",
  "etcDir": "/state/sandboxes/s1", "netns": "/run/cairn/netns/n/s1", "imageRoot": "/images/x/rootfs",
  "overlay": true, "readonlyRootfs": true, "privileged": true, "noNewPrivs": true,
  "mounts": [{"source": "/v", "target": "/data", "readonly": true, "propagation": "rslave"}],
  "caps": [0, 1], "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"],
  "cgroups": {"v1": {"memory": "/sys/fs/cgroup/memory/cairn/s1/c1"}, "v2": "/sys/fs/cgroup/unified/cairn/s1/c1"},
  "logPath": "/var/log/pods/p/c/0.log", "stopSignal": 15, "oomScoreAdj": 999
}`, func(dir string) (any, error) {
			sp, err := ReadSpec(dir)
			if err != nil {
				return nil, err
			}
			return &sp, WriteSpec(dir, &sp)
		}},
		{"state.json", `{
  "shimPid": 10, "shimStart": 111, "pid": 11, "pidStart": 112, "running": false,
  "startedAt": 1700000000000000000, "finishedAt": 1700000001000000000, "exitCode": 137,
  "reason": "OOMKilled", "message": "m", "logReopens": 2
}`, func(dir string) (any, error) {
			st, _, err := ReadState(dir)
			if err != nil {
				return nil, err
			}
			return st, WriteState(dir, st)
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.raw), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.read(dir); err != nil {
				t.Fatal(err)
			}
			var want, got map[string]any
			if err := json.Unmarshal([]byte(tc.raw), &want); err != nil {
				t.Fatal(err)
			}
			if err := ReadJSON(path, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s written back as\n%v\nwant\n%v", tc.file, got, want)
			}
		})
	}
}

func TestReadStateOfAContainerNeverStarted(t *testing.T) {
	st, ok, err := ReadState(t.TempDir())
	if err != nil || ok || st != (State{}) {
		t.Errorf("ReadState of an empty directory = %+v, %v, %v; want nothing and no error", st, ok, err)
	}
}
