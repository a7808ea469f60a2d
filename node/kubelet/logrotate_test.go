package kubelet

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestPruneRotatedKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	os.WriteFile(path, nil, 0o644)
	for _, ts := range []string{"20240101-000001", "20240101-000003", "20240101-000002", "20240101-000004"} {
		os.WriteFile(path+"."+ts, nil, 0o644)
	}
	pruneRotated(path, 2)
	left, _ := filepath.Glob(path + "*")
	want := []string{path, path + ".20240101-000003", path + ".20240101-000004"}
	if !reflect.DeepEqual(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}
