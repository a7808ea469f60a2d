package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseLogStores(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"boltdb,wal", []string{"boltdb", "wal"}, ""},
		{" wal , boltdb ", []string{"wal", "boltdb"}, ""},
		{"wal,", []string{"wal"}, ""},
		{"boltdb,rocksdb", nil, `unknown raft log store "rocksdb"`},
		{"wal,wal", nil, "twice"},
		{"", nil, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseLogStores(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseLogStores(%q) error %v, want one saying %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("parseLogStores(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSidesToRunKeepsOnlyAndRunsOneCairnPerLogStore(t *testing.T) {
	stores := []string{"boltdb", "wal"}
	tests := []struct {
		only    string
		want    []string
		wantErr bool
	}{
		{"", []string{"etcd", "cairn-boltdb", "cairn-wal"}, false},
		{"etcd", []string{"etcd"}, false},
		{"cairn", []string{"cairn-boltdb", "cairn-wal"}, false},
		{"consul", nil, true},
	}
	for _, tt := range tests {
		t.Run("only="+tt.only, func(t *testing.T) {
			sides, err := sidesToRun(tt.only, stores)
			if (err != nil) != tt.wantErr {
				t.Fatalf("sidesToRun(%q) error %v, want error %v", tt.only, err, tt.wantErr)
			}
			var names []string
			for _, s := range sides {
				names = append(names, s.name())
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("sidesToRun(%q) = %v, want %v", tt.only, names, tt.want)
			}
		})
	}
}

func TestEachCairnSidePassesItsLogStore(t *testing.T) {
	sides, err := sidesToRun("", []string{"wal", "boltdb"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		label string
		args  []string
	}{
		{"etcd", nil},
		{"cairn wal", []string{"--raft-log-store", "wal"}},
		{"cairn boltdb", []string{"--raft-log-store", "boltdb"}},
	}
	for i, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			if got := sides[i].label(); got != tt.label {
				t.Errorf("side %d label %q, want %q", i, got, tt.label)
			}
			if got := sides[i].extraArgs(); !slices.Equal(got, tt.args) {
				t.Errorf("side %d args %v, want %v", i, got, tt.args)
			}
		})
	}
}
