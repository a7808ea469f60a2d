package mvcc

import (
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// benchKeys are preformatted so the benchmarks measure the store only.
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("/registry/pods/default/pod-%06d", i))
	}
	return keys
}

// BenchmarkPut overwrites 10k keys round robin with 256-byte values,
// compacting every 10k writes as a server would.
func BenchmarkPut(b *testing.B) {
	for _, watchers := range []int{0, 1} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			s := New()
			keys := benchKeys(10000)
			val := make([]byte, 256)
			if watchers > 0 {
				w, _ := s.Watch(WatchRequest{Key: []byte("/registry/"), End: []byte("/registry0")})
				defer w.Close()
				go func() {
					for range w.Chan() {
					}
				}()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Put(&pb.PutRequest{Key: keys[i%len(keys)], Value: val}); err != nil {
					b.Fatal(err)
				}
				if i%10000 == 9999 {
					if _, err := s.Compact(s.Rev() - 100); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkRange reads from a store of 10k keys.
func BenchmarkRange(b *testing.B) {
	s := New()
	keys := benchKeys(10000)
	val := make([]byte, 256)
	for _, k := range keys {
		if _, err := s.Put(&pb.PutRequest{Key: k, Value: val}); err != nil {
			b.Fatal(err)
		}
	}
	tests := []struct {
		name string
		req  func(i int) *pb.RangeRequest
	}{
		{"single", func(i int) *pb.RangeRequest { return &pb.RangeRequest{Key: keys[i%len(keys)]} }},
		{"prefix-limit-100", func(int) *pb.RangeRequest {
			return &pb.RangeRequest{Key: []byte("/registry/pods/"), RangeEnd: []byte("/registry/pods0"), Limit: 100}
		}},
		{"prefix-count-only", func(int) *pb.RangeRequest {
			return &pb.RangeRequest{Key: []byte("/registry/pods/"), RangeEnd: []byte("/registry/pods0"), CountOnly: true}
		}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := s.Range(tt.req(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
