package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"cairn/internal/storebench"
)

func TestJSONHoldsEveryVariantsReport(t *testing.T) {
	tests := []struct {
		name      string
		only      string
		wantEtcd  bool
		wantCairn []string
	}{
		{"all sides", "", true, []string{"boltdb", "wal"}},
		{"only cairn", "cairn", false, []string{"boltdb", "wal"}},
		{"only etcd", "etcd", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sides, err := sidesToRun(tt.only, []string{"boltdb", "wal"})
			if err != nil {
				t.Fatal(err)
			}
			reports := map[side]*storebench.Report{}
			for i, s := range sides {
				reports[s] = report(float64(1000*(i+1)), time.Millisecond, time.Second, 0)
			}
			path := filepath.Join(t.TempDir(), "bench.json")
			if err := writeJSON(path, reports); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if _, ok := got["etcd"]; ok != tt.wantEtcd {
				t.Errorf("etcd report present %v, want %v:\n%s", ok, tt.wantEtcd, b)
			}
			var cairn map[string]storebench.Report
			if raw, ok := got["cairn"]; ok {
				if err := json.Unmarshal(raw, &cairn); err != nil {
					t.Fatal(err)
				}
			}
			var stores []string
			for s, rep := range cairn {
				stores = append(stores, s)
				if len(rep.Results) == 0 {
					t.Errorf("cairn %s report has no results", s)
				}
			}
			slices.Sort(stores)
			if !slices.Equal(stores, tt.wantCairn) {
				t.Errorf("cairn reports for %v, want %v:\n%s", stores, tt.wantCairn, b)
			}
		})
	}
}
