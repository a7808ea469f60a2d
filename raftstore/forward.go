package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/protobuf/proto"
)

// A follower forwards client writes to the leader in batches: every
// proposal that arrives while a batch is on the wire rides in the next one.
// One message then carries many writes, as etcd's Raft messages do. Batches
// travel on one connection per leader, multiplexed by id (see
// forwardconn.go): a plain framed channel costs a follower's write about a
// tenth of a millisecond less than a gRPC call on a quiet machine.
const (
	forwardSenders       = 4       // batches in flight to the leader at once
	forwardMaxBatch      = 256     // proposals in one batch
	forwardMaxBatchBytes = 4 << 20 // payload above which a batch stops growing
)

// Per-proposal result status bytes in a batch answer.
const (
	resultOK    = 0
	resultErr   = 1
	resultRetry = 2 // not appended (the leader lost leadership first)
)

type forwardReq struct {
	ctx  context.Context
	t    commandType
	data []byte
	done chan forwardResult
}

type forwardResult struct {
	resp  proto.Message
	err   error
	retry bool
}

// forwarder queues proposals for the leader and sends them in batches.
// Answers go from the connection's reader straight to the waiting callers.
type forwarder struct {
	s        *Server
	queue    chan *forwardReq
	inflight chan struct{} // one token per batch on the wire
	dial     func(ctx context.Context, addr string) (net.Conn, error)

	mu   sync.Mutex
	conn *leaderConn // to the last leader written to; nil before the first
}

func newForwarder(s *Server, dial func(ctx context.Context, addr string) (net.Conn, error)) *forwarder {
	return &forwarder{
		s:        s,
		queue:    make(chan *forwardReq, 4096),
		inflight: make(chan struct{}, forwardSenders),
		dial:     dial,
	}
}

func (f *forwarder) run() {
	var wg sync.WaitGroup
	wg.Go(f.followLeader)
	f.sendLoop()
	wg.Wait()
	f.closeConn("")
}

// followLeader closes the connection to a leader that lost its place, so
// that writes waiting on it fail at once (with an unknown outcome)
// instead of at their timeout, and connects to a new leader before the
// first write: the open connection is also how this follower sees the
// leader's process die (see hasten.go).
func (f *forwarder) followLeader() {
	for {
		changed := f.s.leaderSig.wait()
		addr, _ := f.s.leader()
		f.closeConn(string(addr))
		if addr != "" && f.s.raft.State() == raft.Follower {
			ctx, cancel := context.WithTimeout(f.s.ctx, f.s.cfg.RequestTimeout)
			if _, err := f.connTo(ctx, string(addr)); err != nil {
				f.s.log.Debug("connecting to the leader for forwarded writes", "leader_addr", string(addr), "err", err)
			}
			cancel()
		}
		select {
		case <-changed:
		case <-f.s.ctx.Done():
			return
		}
	}
}

// closeConn closes the connection unless it goes to keep.
func (f *forwarder) closeConn(keep string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil && (keep == "" || f.conn.addr != keep) {
		f.conn.close()
		f.conn = nil
	}
}

// forward sends one proposal to leader as part of a batch. retry is true
// only when the leader certainly did not append it.
func (f *forwarder) forward(ctx context.Context, t commandType, data []byte) (proto.Message, error, bool) {
	req := &forwardReq{ctx: ctx, t: t, data: data, done: make(chan forwardResult, 1)}
	if !f.sendAlone(req) {
		select {
		case f.queue <- req:
		case <-ctx.Done():
			return nil, ctx.Err(), false
		}
	}
	select {
	case r := <-req.done:
		return r.resp, r.err, r.retry
	case <-ctx.Done():
		return nil, ctx.Err(), false
	}
}

// sendAlone sends req as a batch of its own from the caller's goroutine
// when nothing waits to be batched and the wire has room, which spares a
// lone writer the hand-off to the send loop.
func (f *forwarder) sendAlone(req *forwardReq) bool {
	select {
	case f.inflight <- struct{}{}:
	default:
		return false
	}
	if len(f.queue) > 0 {
		<-f.inflight
		return false
	}
	f.send([]*forwardReq{req}, func() { <-f.inflight })
	return true
}

// sendLoop sends the queued proposals as batches whenever fewer than
// forwardSenders are on the wire; the proposals that queue up meanwhile
// form the next one.
func (f *forwarder) sendLoop() {
	for {
		var first *forwardReq
		select {
		case <-f.s.ctx.Done():
			return
		case first = <-f.queue:
		}
		select {
		case <-f.s.ctx.Done():
			first.done <- forwardResult{err: ErrStopped}
			return
		case f.inflight <- struct{}{}:
		}
		batch, size := []*forwardReq{first}, len(first.data)
	drain:
		for len(batch) < forwardMaxBatch && size < forwardMaxBatchBytes {
			select {
			case r := <-f.queue:
				batch = append(batch, r)
				size += len(r.data)
			default:
				break drain
			}
		}
		f.send(batch, func() { <-f.inflight })
	}
}

// connTo returns a working connection to the leader at addr, dialing one
// when the last connection went to another leader or broke.
func (f *forwarder) connTo(ctx context.Context, addr string) (*leaderConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil && f.conn.addr == addr && !f.conn.isBroken() {
		return f.conn, nil
	}
	if f.conn != nil {
		f.conn.close()
		f.conn = nil
	}
	c, err := f.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	f.conn = newLeaderConn(addr, c, forwardMaxAnswerBytes, func() { f.s.hastener.leaderConnLost(addr) })
	return f.conn, nil
}

// send writes one batch; its callers get their results when the answer
// arrives, and release runs then.
func (f *forwarder) send(batch []*forwardReq, release func()) {
	finish := func(r forwardResult) {
		for _, req := range batch {
			req.done <- r
		}
		release()
	}
	live := batch[:0]
	for _, req := range batch {
		if req.ctx.Err() == nil {
			live = append(live, req)
		} else {
			req.done <- forwardResult{err: req.ctx.Err()}
		}
	}
	batch = live
	if len(batch) == 0 {
		release()
		return
	}
	addr, _ := f.s.leader()
	if addr == "" || f.s.raft.State() == raft.Leader {
		finish(forwardResult{retry: true})
		return
	}
	ctx, cancel := context.WithTimeout(f.s.ctx, f.s.cfg.RequestTimeout)
	defer cancel()
	conn, err := f.connTo(ctx, string(addr))
	if err != nil {
		finish(forwardResult{retry: true})
		return
	}
	var payload []byte
	for _, req := range batch {
		payload = appendFrame(payload, req.data)
	}
	conn.send(payload, time.Now().Add(f.s.cfg.RequestTimeout), func(answer []byte, sent bool, err error) {
		if err != nil {
			if !sent {
				finish(forwardResult{retry: true})
				return
			}
			// The leader may have applied the batch: the outcome is unknown.
			finish(forwardResult{err: rpctypes.ErrGRPCTimeoutDueToLeaderFail})
			return
		}
		if len(answer) == 0 {
			finish(forwardResult{err: errors.New("raftstore: empty forwarded batch answer")})
			return
		}
		switch answer[0] {
		case batchNotLeader:
			finish(forwardResult{retry: true})
			return
		case batchRefused:
			finish(forwardResult{err: fmt.Errorf("raftstore: the leader refused a forwarded batch: %s", answer[1:])})
			return
		}
		results, err := splitFrames(answer[1:])
		if err != nil || len(results) != len(batch) {
			finish(forwardResult{err: fmt.Errorf("raftstore: bad forwarded batch answer (%v)", err)})
			return
		}
		for i, req := range batch {
			req.done <- decodeBatchResult(req.t, results[i])
		}
		release()
	})
}

func decodeBatchResult(t commandType, b []byte) forwardResult {
	if len(b) == 0 {
		return forwardResult{err: errors.New("raftstore: empty forwarded result")}
	}
	switch b[0] {
	case resultRetry:
		return forwardResult{retry: true}
	case resultErr:
		return forwardResult{err: errorFromText(string(b[1:]))}
	}
	msg := responseMessage(t)
	if err := proto.Unmarshal(b[1:], msg); err != nil {
		return forwardResult{err: fmt.Errorf("raftstore: decoding forwarded result: %w", err)}
	}
	return forwardResult{resp: msg}
}

// appendFrame appends b to buf with its uvarint length in front.
func appendFrame(buf, b []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

// splitFrames splits a concatenation of uvarint-length-prefixed frames.
func splitFrames(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errors.New("raftstore: truncated frame")
		}
		out = append(out, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return out, nil
}
