package storebench

import (
	"bytes"
	"strings"
	"testing"
)

func TestKeysHaveTheConfiguredSizeAndSortInIndexOrder(t *testing.T) {
	tests := []struct {
		name string
		i    int
		size int
		want string
	}{
		{"padded to size", 42, 24, "/storebench/k/0000000042"},
		{"index fills the key", 9999, 18, "/storebench/k/9999"},
		{"too short a size keeps every digit", 12345, 10, "/storebench/k/12345"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keyOf(tt.i, tt.size); got != tt.want {
				t.Errorf("keyOf(%d, %d) = %q, want %q", tt.i, tt.size, got, tt.want)
			}
		})
	}
	t.Run("sort order", func(t *testing.T) {
		if a, b := keyOf(9, DefaultKeySize), keyOf(10, DefaultKeySize); a >= b || len(a) != DefaultKeySize {
			t.Errorf("keyOf(9) = %q, keyOf(10) = %q: want equal lengths of %d, in order", a, b, DefaultKeySize)
		}
	})
}

func TestFailoverKeysRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		writer int
		seq    int64
	}{
		{"first write", 0, 0},
		{"later writer", 63, 123456},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := failoverKey(tt.writer, tt.seq)
			if !strings.HasPrefix(key, failoverPrefix(tt.writer)) {
				t.Fatalf("key %q lacks its writer's prefix %q", key, failoverPrefix(tt.writer))
			}
			seq, err := failoverSeq(key, tt.writer)
			if err != nil || seq != tt.seq {
				t.Errorf("failoverSeq(%q) = %d, %v; want %d", key, seq, err, tt.seq)
			}
			if _, err := failoverSeq(key, tt.writer+1); err == nil {
				t.Errorf("failoverSeq accepted %q as a key of writer %d", key, tt.writer+1)
			}
		})
	}
	if a, b := failoverKey(1, 9), failoverKey(1, 10); a >= b {
		t.Errorf("failover keys out of order: %q >= %q", a, b)
	}
}

func TestValueForIsDerivedFromTheKey(t *testing.T) {
	tests := []struct {
		name string
		key  string
		size int
		want string
	}{
		{"repeats the key", "ab", 5, "ababa"},
		{"truncates the key", "abcdef", 3, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := valueFor(tt.key, tt.size); !bytes.Equal(got, []byte(tt.want)) {
				t.Errorf("valueFor(%q, %d) = %q, want %q", tt.key, tt.size, got, tt.want)
			}
		})
	}
}
