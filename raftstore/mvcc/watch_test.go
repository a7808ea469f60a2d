package mvcc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func mustWatch(t *testing.T, s *Store, req WatchRequest) *Watcher {
	t.Helper()
	w, err := s.Watch(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func TestWatchReplaysHistoryThenGoesLive(t *testing.T) {
	s := New()
	put(t, s, "a", "1") // 2
	put(t, s, "b", "1") // 3
	put(t, s, "a", "2") // 4
	del(t, s, "a", "")  // 5
	w := mustWatch(t, s, WatchRequest{Key: []byte("a"), StartRev: 3})
	if got := evsString(recvEvents(t, w, 2)); got != "PUT a=2@4, DELETE a@5" {
		t.Fatalf("replay: %s", got)
	}
	put(t, s, "a", "3") // 6
	put(t, s, "b", "2") // 7
	put(t, s, "a", "4") // 8
	if got := evsString(recvEvents(t, w, 2)); got != "PUT a=3@6, PUT a=4@8" {
		t.Fatalf("live: %s", got)
	}
	noMore(t, w)
}

func TestWatchKeySelection(t *testing.T) {
	tests := []struct {
		name string
		req  WatchRequest
		want string
	}{
		{"single key", WatchRequest{Key: []byte("foo")}, "foo"},
		{"range", WatchRequest{Key: []byte("foo"), End: []byte("foo/b")}, "foo,foo/a"},
		{"prefix", WatchRequest{Key: []byte("foo/"), End: []byte("foo0")}, "foo/a,foo/b"},
		{"from key", WatchRequest{Key: []byte("foo/a"), End: []byte{0}}, "foo/a,foo/b,fop,zzz"},
		{"everything", WatchRequest{Key: []byte{0}, End: []byte{0}}, "fo,foo,foo/a,foo/b,fop,zzz"},
		{"empty key means the smallest key", WatchRequest{End: []byte{0}}, "fo,foo,foo/a,foo/b,fop,zzz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			w := mustWatch(t, s, tt.req)
			for _, k := range []string{"fo", "foo", "foo/a", "foo/b", "fop", "zzz"} {
				put(t, s, k, "v")
			}
			n := strings.Count(tt.want, ",") + 1
			evs := recvEvents(t, w, n)
			var keys []string
			for _, ev := range evs {
				keys = append(keys, string(ev.Kv.Key))
			}
			if got := strings.Join(keys, ","); got != tt.want {
				t.Fatalf("keys %s, want %s", got, tt.want)
			}
			noMore(t, w)
		})
	}
}

func TestWatchFiltersDropEventsButNotProgress(t *testing.T) {
	tests := []struct {
		name string
		req  WatchRequest
		want string
	}{
		{"no put", WatchRequest{Key: []byte("k"), NoPut: true}, "DELETE k@3, DELETE k@5"},
		{"no delete", WatchRequest{Key: []byte("k"), NoDelete: true}, "PUT k=1@2, PUT k=2@4"},
	}
	for _, tt := range tests {
		for _, replay := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s replay=%v", tt.name, replay), func(t *testing.T) {
				s := New()
				ops := func() {
					put(t, s, "k", "1")
					del(t, s, "k", "")
					put(t, s, "k", "2")
					del(t, s, "k", "")
				}
				req := tt.req
				if replay {
					ops()
					req.StartRev = 2
				}
				w := mustWatch(t, s, req)
				if !replay {
					ops()
				}
				if got := evsString(recvEvents(t, w, 2)); got != tt.want {
					t.Fatalf("events %s, want %s", got, tt.want)
				}
				put(t, s, "other", "x")
				waitSynced(t, w, s.Rev())
			})
		}
	}
}

// waitSynced waits until the watcher reports it is synced at rev.
func waitSynced(t *testing.T, w *Watcher, rev int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if got, ok := w.Synced(); ok && got == rev {
			return
		}
		time.Sleep(time.Millisecond)
	}
	got, ok := w.Synced()
	t.Fatalf("Synced() = %d, %v; want %d, true", got, ok, rev)
}

func TestWatchPrevKV(t *testing.T) {
	const want = "PUT k=1@2, PUT k=2@3 prev=1, DELETE k@4 prev=2, PUT k=3@5"
	for _, replay := range []bool{false, true} {
		t.Run(fmt.Sprint("replay=", replay), func(t *testing.T) {
			s := New()
			ops := func() {
				put(t, s, "k", "1")
				put(t, s, "k", "2")
				del(t, s, "k", "")
				put(t, s, "k", "3")
			}
			req := WatchRequest{Key: []byte("k"), PrevKV: true}
			if replay {
				ops()
				req.StartRev = 1
			}
			w := mustWatch(t, s, req)
			if !replay {
				ops()
			}
			if got := evsString(recvEvents(t, w, 4)); got != want {
				t.Fatalf("events %s, want %s", got, want)
			}
		})
	}
}

func TestWatchTxnRevisionArrivesAsOneBatch(t *testing.T) {
	s := New()
	w := mustWatch(t, s, WatchRequest{Key: []byte("a"), End: []byte("z")})
	put(t, s, "b", "0")
	if _, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut("c", "1"), opDel("b", ""), opPut("a", "1")}}); err != nil {
		t.Fatal(err)
	}
	recv(t, w)
	r := recv(t, w)
	if got := evsString(r.Events); got != "PUT c=1@3, DELETE b@3, PUT a=1@3" || r.Revision != 3 {
		t.Fatalf("batch %s at %d", got, r.Revision)
	}
}

func TestWatchFutureStartRevWaits(t *testing.T) {
	s := New()
	w := mustWatch(t, s, WatchRequest{Key: []byte("k"), StartRev: 4})
	put(t, s, "k", "2") // 2
	put(t, s, "k", "3") // 3
	put(t, s, "k", "4") // 4
	if got := evsString(recvEvents(t, w, 1)); got != "PUT k=4@4" {
		t.Fatalf("events %s", got)
	}
}

func TestWatchSlowConsumerCatchesUpWithoutLoss(t *testing.T) {
	s := New()
	w := mustWatch(t, s, WatchRequest{Key: []byte("k"), End: []byte("l")})
	other := mustWatch(t, s, WatchRequest{Key: []byte("k0")})
	// Nobody reads while the channel overflows several times over; the
	// writer must not block.
	const n = 3*watchChanCap + 50
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			put(t, s, fmt.Sprintf("k%d", i%5), fmt.Sprint(i))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("writes blocked on a slow watcher")
	}
	if _, ok := w.Synced(); ok {
		t.Fatal("an overflowing watcher claims to be synced")
	}
	evs := recvEvents(t, w, n)
	for i, ev := range evs {
		if ev.Kv.ModRevision != int64(i+2) || string(ev.Kv.Value) != fmt.Sprint(i) {
			t.Fatalf("event %d is %s", i, evString(ev))
		}
	}
	waitSynced(t, w, s.Rev())
	// And it is live again.
	put(t, s, "k9", "live")
	if got := evsString(recvEvents(t, w, 1)); got != fmt.Sprintf("PUT k9=live@%d", s.Rev()) {
		t.Fatalf("after catch-up: %s", got)
	}
	// The other watcher overflowed too, and still lost nothing.
	if got := len(recvEvents(t, other, (n+4)/5)); got != (n+4)/5 {
		t.Fatalf("other watcher got %d", got)
	}
}

func TestWatchCompactionCancelsUnsyncedWatcher(t *testing.T) {
	s := New()
	w := mustWatch(t, s, WatchRequest{Key: []byte("k")})
	for i := range watchChanCap + 20 {
		put(t, s, "k", fmt.Sprint(i))
	}
	if _, err := s.Compact(s.Rev()); err != nil {
		t.Fatal(err)
	}
	got := 0
	for r := range w.Chan() {
		if r.CompactRevision != 0 {
			if r.CompactRevision != s.Rev() || len(r.Events) != 0 {
				t.Fatalf("compaction response %+v", r)
			}
			if _, open := <-w.Chan(); open {
				t.Fatal("channel open after the compaction response")
			}
			if got != watchChanCap {
				t.Fatalf("%d events before the compaction response, want %d", got, watchChanCap)
			}
			return
		}
		got += len(r.Events)
	}
	t.Fatal("channel closed without a compaction response")
}

func TestWatchFromCompactedRevision(t *testing.T) {
	s := New()
	put(t, s, "k", "1") // 2
	put(t, s, "k", "2") // 3
	del(t, s, "k", "")  // 4
	put(t, s, "j", "1") // 5
	if _, err := s.Compact(4); err != nil {
		t.Fatal(err)
	}
	w := mustWatch(t, s, WatchRequest{Key: []byte("k"), StartRev: 3})
	if r := recv(t, w); r.CompactRevision != 4 {
		t.Fatalf("response %+v, want CompactRevision 4", r)
	}
	// Starting exactly at the compact revision still sees its events,
	// including the delete there.
	at := mustWatch(t, s, WatchRequest{Key: []byte("k"), StartRev: 4})
	if got := evsString(recvEvents(t, at, 1)); got != "DELETE k@4" {
		t.Fatalf("from the compact revision: %s", got)
	}
}

func TestWatchClose(t *testing.T) {
	s := New()
	w, _ := s.Watch(WatchRequest{Key: []byte("k")})
	w.Close()
	w.Close()
	put(t, s, "k", "after close")
	if _, open := <-w.Chan(); open {
		t.Fatal("channel open after Close")
	}
	if _, ok := w.Synced(); ok {
		t.Fatal("closed watcher reports synced")
	}
}

func TestWatchersSurviveRestore(t *testing.T) {
	leader := New()
	put(t, leader, "k", "1") // 2
	put(t, leader, "k", "2") // 3
	follower := New()
	if err := follower.Restore(bytes.NewReader(snapshotBytes(t, leader))); err != nil {
		t.Fatal(err)
	}
	w := mustWatch(t, follower, WatchRequest{Key: []byte("k"), PrevKV: true})
	behind := mustWatch(t, follower, WatchRequest{Key: []byte("k"), StartRev: 2})
	if got := evsString(recvEvents(t, behind, 2)); got != "PUT k=1@2, PUT k=2@3" {
		t.Fatalf("before restore: %s", got)
	}

	// The leader moves on; the follower catches up through a snapshot.
	put(t, leader, "k", "3")  // 4
	put(t, leader, "x", "no") // 5
	put(t, leader, "k", "4")  // 6
	if err := follower.Restore(bytes.NewReader(snapshotBytes(t, leader))); err != nil {
		t.Fatal(err)
	}
	want := "PUT k=3@4 prev=2, PUT k=4@6 prev=3"
	if got := evsString(recvEvents(t, w, 2)); got != want {
		t.Fatalf("after restore: %s, want %s", got, want)
	}
	if got := evsString(recvEvents(t, behind, 2)); got != "PUT k=3@4, PUT k=4@6" {
		t.Fatalf("second watcher after restore: %s", got)
	}
	waitSynced(t, w, 6)
	put(t, follower, "k", "5")
	if got := evsString(recvEvents(t, w, 1)); got != "PUT k=5@7 prev=4" {
		t.Fatalf("live after restore: %s", got)
	}

	// A snapshot compacted past a watcher's position cancels it.
	put(t, leader, "k", "5") // 7
	put(t, leader, "k", "6") // 8
	put(t, leader, "k", "7") // 9
	if _, err := leader.Compact(9); err != nil {
		t.Fatal(err)
	}
	lagging := mustWatch(t, follower, WatchRequest{Key: []byte("nothing")})
	if err := follower.Restore(bytes.NewReader(snapshotBytes(t, leader))); err != nil {
		t.Fatal(err)
	}
	// It had everything up to 7 and needs 8, which is gone.
	if r := recv(t, lagging); r.CompactRevision != 9 {
		t.Fatalf("response %+v, want CompactRevision 9", r)
	}
}
