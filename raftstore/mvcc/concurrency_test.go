package mvcc

import (
	"fmt"
	"io"
	"sync"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func TestConcurrentReadersWhileWriting(t *testing.T) {
	s := New()
	mustGrant(t, s, 1)
	for i := range 2*rangeChunk + 100 {
		put(t, s, fmt.Sprintf("k%05d", i), "seed")
	}
	const writes = 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}

	// Readers: a read at a fixed revision must not change while the
	// writer goes on, and the current revision only grows.
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rev := s.Rev()
				if rev < last {
					report(fmt.Errorf("revision went back from %d to %d", last, rev))
					return
				}
				last = rev
				req := &pb.RangeRequest{Key: []byte("k"), RangeEnd: []byte("l"), Revision: rev}
				a, err1 := s.Range(req)
				b, err2 := s.Range(req)
				if err1 != nil || err2 != nil {
					// Compaction may overtake an old revision; that is fine.
					continue
				}
				if a.Count != int64(len(a.Kvs)) || kvsString(a.Kvs) != kvsString(b.Kvs) {
					report(fmt.Errorf("reader %d: inconsistent reads at %d", r, rev))
					return
				}
				if i%50 == 0 {
					s.HashKV(0)
					s.Leases()
					s.Snapshot().WriteTo(io.Discard)
				}
			}
		}()
	}
	// A watcher consumer, draining and checking order.
	w := mustWatch(t, s, WatchRequest{Key: []byte("k"), End: []byte("l")})
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := int64(0)
		for {
			select {
			case <-stop:
				return
			case r := <-w.Chan():
				for _, ev := range r.Events {
					if ev.Kv.ModRevision < last {
						report(fmt.Errorf("event at %d after %d", ev.Kv.ModRevision, last))
						return
					}
					last = ev.Kv.ModRevision
				}
				w.Synced()
			}
		}
	}()

	for i := range writes {
		k := fmt.Sprintf("k%05d", i%300)
		switch i % 10 {
		case 3:
			del(t, s, k, "")
		case 5:
			if _, err := s.Txn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut(k, "t"), opPut(k+"x", "t")}}); err != nil {
				t.Fatal(err)
			}
		case 7:
			putLease(t, s, k, "l", 1)
		default:
			put(t, s, k, fmt.Sprint(i))
		}
		if i%400 == 399 {
			if _, err := s.Compact(s.Rev() - 50); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
