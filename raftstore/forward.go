package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A follower forwards client writes to the leader in batches: every
// proposal that arrives while a batch is on the wire rides in the next one.
// One RPC then carries many writes, as etcd's Raft messages do, instead of
// one RPC per write.
const (
	forwardSenders  = 4   // batches in flight to the leader at once
	forwardMaxBatch = 256 // proposals in one batch
)

// Per-proposal result status bytes in a batch response.
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
type forwarder struct {
	s     *Server
	queue chan *forwardReq
}

func newForwarder(s *Server) *forwarder {
	return &forwarder{s: s, queue: make(chan *forwardReq, 4096)}
}

func (f *forwarder) run() {
	done := make(chan struct{})
	for i := 0; i < forwardSenders; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			f.sendLoop()
		}()
	}
	for i := 0; i < forwardSenders; i++ {
		<-done
	}
}

// forward sends one proposal to leader as part of a batch. retry is true
// only when the leader certainly did not append it.
func (f *forwarder) forward(ctx context.Context, t commandType, data []byte) (proto.Message, error, bool) {
	req := &forwardReq{ctx: ctx, t: t, data: data, done: make(chan forwardResult, 1)}
	select {
	case f.queue <- req:
	case <-ctx.Done():
		return nil, ctx.Err(), false
	}
	select {
	case r := <-req.done:
		return r.resp, r.err, r.retry
	case <-ctx.Done():
		return nil, ctx.Err(), false
	}
}

func (f *forwarder) sendLoop() {
	for {
		var first *forwardReq
		select {
		case <-f.s.ctx.Done():
			return
		case first = <-f.queue:
		}
		batch := []*forwardReq{first}
	drain:
		for len(batch) < forwardMaxBatch {
			select {
			case r := <-f.queue:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		f.send(batch)
	}
}

func (f *forwarder) send(batch []*forwardReq) {
	finish := func(r forwardResult) {
		for _, req := range batch {
			req.done <- r
		}
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
		return
	}
	addr, _ := f.s.raft.LeaderWithID()
	if addr == "" || f.s.raft.State() == raft.Leader {
		finish(forwardResult{retry: true})
		return
	}
	conn, err := f.s.peers.get(string(addr))
	if err != nil {
		finish(forwardResult{retry: true})
		return
	}
	var payload []byte
	for _, req := range batch {
		payload = binary.AppendUvarint(payload, uint64(len(req.data)))
		payload = append(payload, req.data...)
	}
	ctx, cancel := f.s.untilLeaderChange(f.s.ctx, f.s.cfg.RequestTimeout)
	defer cancel()
	out := new(wrapperspb.BytesValue)
	if err := conn.Invoke(ctx, peerMethodProposeBatch, wrapperspb.Bytes(payload), out); err != nil {
		if notSent(err) {
			finish(forwardResult{retry: true})
			return
		}
		// The leader may have applied the batch: the outcome is unknown.
		finish(forwardResult{err: rpctypes.ErrGRPCTimeoutDueToLeaderFail})
		return
	}
	results, err := splitFrames(out.Value)
	if err != nil || len(results) != len(batch) {
		finish(forwardResult{err: fmt.Errorf("raftstore: bad forwarded batch result (%v)", err)})
		return
	}
	for i, req := range batch {
		req.done <- decodeBatchResult(req.t, results[i])
	}
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

// peerProposeBatch applies a follower's batch on the leader. All commands
// are handed to Raft before any is waited for, so they share log appends.
func (s *Server) peerProposeBatch(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	if s.raft.State() != raft.Leader {
		return nil, status.Error(codes.FailedPrecondition, errNotLeaderMsg)
	}
	cmds, err := splitFrames(in.Value)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	timeout := time.Until(deadlineOf(ctx, s.cfg.RequestTimeout))
	futures := make([]raft.ApplyFuture, len(cmds))
	for i, c := range cmds {
		futures[i] = s.raft.Apply(c, timeout)
	}
	var out []byte
	for _, f := range futures {
		resp, err, retry := s.applyResult(f)
		var frame []byte
		switch {
		case retry:
			frame = []byte{resultRetry}
		case err != nil:
			frame = append([]byte{resultErr}, err.Error()...)
		default:
			b, merr := proto.Marshal(resp)
			if merr != nil {
				return nil, merr
			}
			frame = append([]byte{resultOK}, b...)
		}
		out = binary.AppendUvarint(out, uint64(len(frame)))
		out = append(out, frame...)
	}
	return wrapperspb.Bytes(out), nil
}
