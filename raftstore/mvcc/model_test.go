package mvcc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// model is a plain reference: the full key-value map at every revision.
type model struct {
	states []map[string]*mvccpb.KeyValue // index = revision
}

func newModel() *model {
	return &model{states: []map[string]*mvccpb.KeyValue{nil, {}}}
}

func (m *model) rev() int64 { return int64(len(m.states) - 1) }

// apply records one revision made of puts (value set) and deletes (nil).
func (m *model) apply(changes map[string]*string) {
	if len(changes) == 0 {
		return
	}
	prev := m.states[len(m.states)-1]
	next := make(map[string]*mvccpb.KeyValue, len(prev))
	for k, v := range prev {
		next[k] = v
	}
	rev := m.rev() + 1
	for k, v := range changes {
		old := prev[k]
		if v == nil {
			delete(next, k)
			continue
		}
		kv := &mvccpb.KeyValue{Key: []byte(k), Value: []byte(*v), ModRevision: rev, CreateRevision: rev, Version: 1}
		if old != nil {
			kv.CreateRevision, kv.Version = old.CreateRevision, old.Version+1
		}
		next[k] = kv
	}
	m.states = append(m.states, next)
}

func (m *model) read(rev int64) string {
	st := m.states[rev]
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	kvs := make([]*mvccpb.KeyValue, len(keys))
	for i, k := range keys {
		kvs[i] = st[k]
	}
	return kvsString(kvs)
}

// events lists the changes of revision rev as sorted strings.
func (m *model) events(rev int64) []string {
	before, after := m.states[rev-1], m.states[rev]
	var out []string
	for k, kv := range after {
		if old := before[k]; old == nil || old.ModRevision != kv.ModRevision {
			out = append(out, fmt.Sprintf("PUT %s=%s@%d", k, kv.Value, rev))
		}
	}
	for k := range before {
		if after[k] == nil {
			out = append(out, fmt.Sprintf("DELETE %s@%d", k, rev))
		}
	}
	slices.Sort(out)
	return out
}

// randomOps drives a store and the model with the same random operations.
func randomOps(t *testing.T, s *Store, m *model, rng *rand.Rand, n int) {
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	liveIn := func(lo, hi string) []string {
		var out []string
		for k := range m.states[len(m.states)-1] {
			if k >= lo && k < hi {
				out = append(out, k)
			}
		}
		return out
	}
	for i := range n {
		val := fmt.Sprint(i)
		switch op := rng.IntN(10); {
		case op < 5:
			k := keys[rng.IntN(len(keys))]
			put(t, s, k, val)
			m.apply(map[string]*string{k: &val})
		case op < 7:
			lo := keys[rng.IntN(len(keys))]
			hi := string(rune(lo[0] + byte(1+rng.IntN(3))))
			del(t, s, lo, hi)
			changes := map[string]*string{}
			for _, k := range liveIn(lo, hi) {
				changes[k] = nil
			}
			m.apply(changes)
		case op < 9:
			k1, k2 := keys[rng.IntN(4)], keys[4+rng.IntN(4)]
			if _, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut(k1, val), opDel(k2, "")}}); err != nil {
				t.Fatal(err)
			}
			changes := map[string]*string{k1: &val}
			if len(liveIn(k2, k2+"\x00")) == 1 {
				changes[k2] = nil
			}
			m.apply(changes)
		default:
			if lo := s.CompactRev() + 1; lo <= s.Rev() {
				at := lo + rng.Int64N(s.Rev()-lo+1)
				if _, err := s.Compact(at); err != nil {
					t.Fatal(err)
				}
			}
		}
		if s.Rev() != m.rev() {
			t.Fatalf("op %d: store at %d, model at %d", i, s.Rev(), m.rev())
		}
	}
}

func checkAgainstModel(t *testing.T, s *Store, m *model) {
	t.Helper()
	for rev := s.CompactRev(); rev <= s.Rev(); rev++ {
		if rev < 1 {
			continue
		}
		if got, want := all(t, s, rev), m.read(rev); got != want {
			t.Fatalf("at %d:\n got %s\nwant %s", rev, got, want)
		}
	}
}

func TestRandomOpsMatchModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			s, m := New(), newModel()
			randomOps(t, s, m, rng, 400)
			checkAgainstModel(t, s, m)

			// A watcher replaying from the compact revision sees exactly
			// the model's changes, revision by revision.
			from := max(s.CompactRev(), 2)
			w, _ := s.Watch(WatchRequest{Key: []byte{0}, End: []byte{0}, StartRev: from})
			defer w.Close()
			byRev := map[int64][]string{}
			for seen := from - 1; seen < s.Rev(); {
				r := recv(t, w)
				for _, ev := range r.Events {
					byRev[ev.Kv.ModRevision] = append(byRev[ev.Kv.ModRevision], evString(ev))
				}
				seen = r.Revision
			}
			for rev := from; rev <= s.Rev(); rev++ {
				got := byRev[rev]
				slices.Sort(got)
				if want := m.events(rev); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("events at %d: %v, want %v", rev, got, want)
				}
			}

			// A restored copy answers the same.
			var buf strings.Builder
			if _, err := s.Snapshot().WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			c := New()
			if err := c.Restore(strings.NewReader(buf.String())); err != nil {
				t.Fatal(err)
			}
			checkAgainstModel(t, c, m)
			randomOps(t, c, m, rng, 100)
			checkAgainstModel(t, c, m)
		})
	}
}
