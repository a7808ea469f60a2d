package mvcc

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// put writes key=val and returns the new revision.
func put(t testing.TB, s *Store, key, val string) int64 {
	t.Helper()
	resp, err := s.Put(&pb.PutRequest{Key: []byte(key), Value: []byte(val)})
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	return resp.Header.Revision
}

// putLease writes key=val attached to lease id.
func putLease(t testing.TB, s *Store, key, val string, id int64) int64 {
	t.Helper()
	resp, err := s.Put(&pb.PutRequest{Key: []byte(key), Value: []byte(val), Lease: id})
	if err != nil {
		t.Fatalf("put %q lease %d: %v", key, id, err)
	}
	return resp.Header.Revision
}

// del deletes [key, end) (end "" = key alone) and returns the count deleted.
func del(t testing.TB, s *Store, key, end string) int64 {
	t.Helper()
	req := &pb.DeleteRangeRequest{Key: []byte(key)}
	if end != "" {
		req.RangeEnd = []byte(end)
	}
	resp, err := s.DeleteRange(req)
	if err != nil {
		t.Fatalf("delete %q: %v", key, err)
	}
	return resp.Deleted
}

// get reads one key at rev (0: current); nil when absent.
func get(t testing.TB, s *Store, key string, rev int64) *mvccpb.KeyValue {
	t.Helper()
	resp, err := s.Range(&pb.RangeRequest{Key: []byte(key), Revision: rev})
	if err != nil {
		t.Fatalf("get %q@%d: %v", key, rev, err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	return resp.Kvs[0]
}

// kvString renders a KeyValue compactly for comparisons.
func kvString(kv *mvccpb.KeyValue) string {
	if kv == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s=%s c%d m%d v%d l%d", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease)
}

// kvsString renders a list of KeyValues.
func kvsString(kvs []*mvccpb.KeyValue) string {
	parts := make([]string, len(kvs))
	for i, kv := range kvs {
		parts[i] = kvString(kv)
	}
	return strings.Join(parts, "; ")
}

// keysOf lists the keys of kvs, joined by commas.
func keysOf(kvs []*mvccpb.KeyValue) string {
	parts := make([]string, len(kvs))
	for i, kv := range kvs {
		parts[i] = string(kv.Key)
	}
	return strings.Join(parts, ",")
}

// all reads every key at rev.
func all(t testing.TB, s *Store, rev int64) string {
	t.Helper()
	resp, err := s.Range(&pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, Revision: rev})
	if err != nil {
		t.Fatalf("range all @%d: %v", rev, err)
	}
	return kvsString(resp.Kvs)
}

func wantErr(t testing.TB, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("error = %v, want %v", got, want)
	}
}

// opPut, opRange, opDel and opTxn build txn operations.
func opPut(key, val string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(val)}}}
}

func opRange(key, end string) *pb.RequestOp {
	r := &pb.RangeRequest{Key: []byte(key)}
	if end != "" {
		r.RangeEnd = []byte(end)
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: r}}
}

func opDel(key, end string) *pb.RequestOp {
	r := &pb.DeleteRangeRequest{Key: []byte(key)}
	if end != "" {
		r.RangeEnd = []byte(end)
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: r}}
}

func opTxn(req *pb.TxnRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: req}}
}

// recv waits for the next watch response.
func recv(t testing.TB, w *Watcher) WatchResponse {
	t.Helper()
	select {
	case r, ok := <-w.Chan():
		if !ok {
			t.Fatalf("watch channel closed")
		}
		return r
	case <-time.After(5 * time.Second):
		t.Fatalf("no watch response within 5s")
	}
	return WatchResponse{}
}

// recvEvents collects events until n have arrived, checking that each
// response holds whole revisions in order.
func recvEvents(t testing.TB, w *Watcher, n int) []*mvccpb.Event {
	t.Helper()
	var evs []*mvccpb.Event
	for len(evs) < n {
		r := recv(t, w)
		if r.CompactRevision != 0 {
			t.Fatalf("unexpected compaction response %+v", r)
		}
		for _, ev := range r.Events {
			if ev.Kv.ModRevision > r.Revision {
				t.Fatalf("event at %d in a batch up to %d", ev.Kv.ModRevision, r.Revision)
			}
		}
		evs = append(evs, r.Events...)
	}
	if len(evs) != n {
		t.Fatalf("got %d events, want %d", len(evs), n)
	}
	return evs
}

// noMore checks that the watcher has nothing queued right now.
func noMore(t testing.TB, w *Watcher) {
	t.Helper()
	select {
	case r, ok := <-w.Chan():
		t.Fatalf("unexpected response %+v (open %v)", r, ok)
	case <-time.After(20 * time.Millisecond):
	}
}

// evString renders an event as "PUT k=v@rev" or "DELETE k@rev".
func evString(ev *mvccpb.Event) string {
	s := fmt.Sprintf("%s %s", ev.Type, ev.Kv.Key)
	if ev.Type == mvccpb.Event_PUT {
		s += "=" + string(ev.Kv.Value)
	}
	s += fmt.Sprintf("@%d", ev.Kv.ModRevision)
	if ev.PrevKv != nil {
		s += fmt.Sprintf(" prev=%s", ev.PrevKv.Value)
	}
	return s
}

func evsString(evs []*mvccpb.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = evString(ev)
	}
	return strings.Join(parts, ", ")
}
