package raftstore

import (
	"context"
	"sync"
	"time"

	"cairn/raftstore/mvcc"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// watchServer serves the etcd Watch API from this replica's own store:
// every replica applies the same log, so any replica can serve any watch,
// and a client that switches replicas resumes with start_revision.
type watchServer struct {
	pb.UnimplementedWatchServer
	s *Server
}

// progressWatchID is the watch ID etcd uses for stream-wide progress
// responses; clients deliver them to every watch on the stream.
const progressWatchID = -1

func (w *watchServer) Watch(stream pb.Watch_WatchServer) error {
	ws := &watchStream{
		s:       w.s,
		stream:  stream,
		sendCh:  make(chan *pb.WatchResponse, 256),
		watches: map[int64]*activeWatch{},
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	ws.ctx = ctx
	errCh := make(chan error, 2)
	go func() { errCh <- ws.sendLoop() }()
	go func() { errCh <- ws.recvLoop() }()
	err := <-errCh
	cancel()
	ws.closeAll()
	return err
}

type watchStream struct {
	s      *Server
	stream pb.Watch_WatchServer
	ctx    context.Context
	sendCh chan *pb.WatchResponse

	mu      sync.Mutex
	nextID  int64
	watches map[int64]*activeWatch
}

type activeWatch struct {
	id       int64
	w        *mvcc.Watcher
	progress bool
	// syncedReq asks the forwarding goroutine, which alone sends this
	// watch's events, up to which revision everything has been sent.
	syncedReq chan chan int64
}

// sentUpTo must run on the forwarding goroutine. Synced is read before the
// channel is checked: a batch the hub delivered before reporting rev is
// then either still queued (not synced) or already sent.
func (aw *activeWatch) sentUpTo() (int64, bool) {
	rev, ok := aw.w.Synced()
	if !ok || len(aw.w.Chan()) > 0 {
		return 0, false
	}
	return rev, true
}

func (ws *watchStream) send(r *pb.WatchResponse) bool {
	select {
	case ws.sendCh <- r:
		return true
	case <-ws.ctx.Done():
		return false
	}
}

func (ws *watchStream) sendLoop() error {
	for {
		select {
		case <-ws.ctx.Done():
			return nil
		case r := <-ws.sendCh:
			if err := ws.stream.Send(r); err != nil {
				return err
			}
		}
	}
}

func (ws *watchStream) header(rev int64) *pb.ResponseHeader {
	h := &pb.ResponseHeader{Revision: rev}
	ws.s.fillHeader(&h)
	return h
}

func (ws *watchStream) recvLoop() error {
	for {
		req, err := ws.stream.Recv()
		if err != nil {
			return err
		}
		switch r := req.RequestUnion.(type) {
		case *pb.WatchRequest_CreateRequest:
			ws.create(r.CreateRequest)
		case *pb.WatchRequest_CancelRequest:
			ws.cancel(r.CancelRequest.WatchId)
		case *pb.WatchRequest_ProgressRequest:
			ws.progress()
		}
	}
}

func (ws *watchStream) create(cr *pb.WatchCreateRequest) {
	req := mvcc.WatchRequest{Key: cr.Key, End: cr.RangeEnd, StartRev: cr.StartRevision, PrevKV: cr.PrevKv}
	for _, f := range cr.Filters {
		switch f {
		case pb.WatchCreateRequest_NOPUT:
			req.NoPut = true
		case pb.WatchCreateRequest_NODELETE:
			req.NoDelete = true
		}
	}
	ws.mu.Lock()
	id := cr.WatchId
	if id == 0 {
		for ws.watches[ws.nextID] != nil {
			ws.nextID++
		}
		id = ws.nextID
		ws.nextID++
	} else if ws.watches[id] != nil {
		ws.mu.Unlock()
		ws.send(&pb.WatchResponse{Header: ws.header(ws.s.fsm.store.Rev()), WatchId: id, Created: true, Canceled: true,
			CancelReason: "mvcc: duplicate watch ID provided on the WatchStream"})
		return
	}
	rev := ws.s.fsm.store.Rev()
	w, err := ws.s.fsm.store.Watch(req)
	if err != nil {
		ws.mu.Unlock()
		ws.send(&pb.WatchResponse{Header: ws.header(rev), WatchId: progressWatchID, Created: true, Canceled: true, CancelReason: err.Error()})
		return
	}
	aw := &activeWatch{id: id, w: w, progress: cr.ProgressNotify, syncedReq: make(chan chan int64)}
	ws.watches[id] = aw
	ws.mu.Unlock()
	ws.s.metrics.watchers.Inc()
	// The created response must precede the watch's events.
	ws.send(&pb.WatchResponse{Header: ws.header(rev), WatchId: id, Created: true})
	go ws.forward(aw)
}

// forward relays one watcher's batches to the stream in order, and sends
// its progress notifications.
func (ws *watchStream) forward(aw *activeWatch) {
	defer ws.s.metrics.watchers.Dec()
	var tick <-chan time.Time
	if aw.progress {
		t := time.NewTicker(ws.s.cfg.WatchProgressNotifyInterval)
		defer t.Stop()
		tick = t.C
	}
	quiet := true
	for {
		select {
		case <-ws.ctx.Done():
			return
		case reply := <-aw.syncedReq:
			rev, ok := aw.sentUpTo()
			if !ok {
				rev = -1
			}
			reply <- rev
		case <-tick:
			if rev, ok := aw.sentUpTo(); ok && quiet {
				ws.send(&pb.WatchResponse{Header: ws.header(rev), WatchId: aw.id})
			}
			quiet = true
		case r, ok := <-aw.w.Chan():
			if !ok {
				return
			}
			if r.CompactRevision != 0 {
				ws.send(&pb.WatchResponse{Header: ws.header(ws.s.fsm.store.Rev()), WatchId: aw.id,
					Canceled: true, CompactRevision: r.CompactRevision,
					CancelReason: "mvcc: required revision has been compacted"})
				ws.remove(aw.id)
				return
			}
			quiet = false
			if !ws.send(&pb.WatchResponse{Header: ws.header(r.Revision), WatchId: aw.id, Events: r.Events}) {
				return
			}
		}
	}
}

func (ws *watchStream) remove(id int64) *activeWatch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	aw := ws.watches[id]
	delete(ws.watches, id)
	return aw
}

func (ws *watchStream) cancel(id int64) {
	aw := ws.remove(id)
	if aw == nil {
		return
	}
	aw.w.Close()
	ws.send(&pb.WatchResponse{Header: ws.header(ws.s.fsm.store.Rev()), WatchId: id, Canceled: true})
}

// progress answers a client's progress request once every watch on the
// stream has sent all its events up to one revision, with that revision.
func (ws *watchStream) progress() {
	ws.mu.Lock()
	list := make([]*activeWatch, 0, len(ws.watches))
	for _, aw := range ws.watches {
		list = append(list, aw)
	}
	ws.mu.Unlock()
	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			rev := ws.s.fsm.store.Rev()
			for _, aw := range list {
				r, ok := ws.askSynced(aw)
				if !ok {
					continue // the watch is gone: it no longer holds progress back
				}
				if r < 0 {
					rev = -1
					break
				}
				if r < rev {
					rev = r
				}
			}
			if rev >= 0 {
				ws.send(&pb.WatchResponse{Header: ws.header(rev), WatchId: progressWatchID})
				return
			}
			select {
			case <-ws.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
}

// askSynced returns how far a watch has sent its events (-1: not synced);
// ok is false if the watch has ended.
func (ws *watchStream) askSynced(aw *activeWatch) (int64, bool) {
	reply := make(chan int64, 1)
	select {
	case aw.syncedReq <- reply:
		return <-reply, true
	case <-ws.ctx.Done():
		return 0, false
	case <-time.After(100 * time.Millisecond):
		ws.mu.Lock()
		_, live := ws.watches[aw.id]
		ws.mu.Unlock()
		if !live {
			return 0, false
		}
		return -1, true
	}
}

func (ws *watchStream) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for id, aw := range ws.watches {
		aw.w.Close()
		delete(ws.watches, id)
	}
}
