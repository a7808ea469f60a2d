package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// grpcOverheadBytes is the slack above --max-request-bytes that gRPC lets
// through, so that an oversized request reaches us and gets etcd's error
// instead of a transport error.
const grpcOverheadBytes = 512 * 1024

// propose replicates a command and returns its apply result. On a
// follower the command is forwarded to the leader; while there is no
// leader it waits for one until the request timeout.
func (s *Server) propose(ctx context.Context, t commandType, msg proto.Message) (proto.Message, error) {
	data, err := encodeCommand(t, msg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	start := time.Now()
	defer func() { s.metrics.proposeLatency.Observe(time.Since(start).Seconds()) }()
	for {
		if err := ctx.Err(); err != nil {
			return nil, s.timeoutError(err)
		}
		changed := s.leaderSig.wait()
		if s.raft.State() == raft.Leader {
			resp, err, retry := s.applyLocal(ctx, data)
			if !retry {
				return resp, err
			}
		} else if addr, _ := s.leader(); addr != "" {
			resp, err, retry := s.forwarder.forward(ctx, t, data)
			if !retry {
				return resp, err
			}
		}
		// No usable leader right now: wait for the next leader change, but
		// poll too, since a forwarding failure may precede the observation.
		select {
		case <-changed:
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, s.timeoutError(ctx.Err())
		case <-s.ctx.Done():
			return nil, ErrStopped
		}
	}
}

// untilLeaderChange derives a context that also ends when the leader
// changes, so that a call stuck on a deposed or unreachable leader gives up
// at once instead of holding its callers until the timeout.
func (s *Server) untilLeaderChange(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	changed := s.leaderSig.wait()
	ctx, cancel := context.WithTimeout(parent, timeout)
	go func() {
		select {
		case <-changed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (s *Server) timeoutError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		if addr, _ := s.leader(); addr == "" {
			return ErrNoLeader
		}
	}
	return err
}

// applyLocal applies data through this replica's Raft, which leads.
// retry is true only when the entry was certainly not appended.
func (s *Server) applyLocal(ctx context.Context, data []byte) (resp proto.Message, err error, retry bool) {
	timeout := time.Until(deadlineOf(ctx, s.cfg.RequestTimeout))
	return s.applyResult(s.raft.Apply(data, timeout))
}

// applyResult waits for an applied entry and unpacks the FSM's answer.
func (s *Server) applyResult(f raft.ApplyFuture) (resp proto.Message, err error, retry bool) {
	if err := s.awaitApplied(f); err != nil {
		s.metrics.proposalsFailed.Inc()
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			return nil, nil, true
		case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, errLeaderChanged, false
		case errors.Is(err, raft.ErrRaftShutdown):
			return nil, ErrStopped, false
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return nil, context.DeadlineExceeded, false
		}
		return nil, err, false
	}
	s.metrics.proposalsCommitted.Inc()
	res, ok := f.Response().(*applyResult)
	if !ok || res == nil {
		return nil, fmt.Errorf("raftstore: no apply result"), false
	}
	return res.resp, res.err, false
}

// awaitApplied waits for f, or until this replica's Raft has shut down:
// Raft never answers an entry still queued for its leader loop when it
// stops (hashicorp/raft#498; BatchApplyCh makes that queue a buffer).
func (s *Server) awaitApplied(f raft.Future) error {
	answered := make(chan error, 1)
	go func() { answered <- f.Error() }()
	select {
	case err := <-answered:
		return err
	case <-s.raftDown:
		// An answer given just before the shutdown still wins.
		select {
		case err := <-answered:
			return err
		case <-time.After(10 * time.Millisecond):
			return raft.ErrRaftShutdown
		}
	}
}

var errLeaderChanged = status.Error(codes.Unavailable, "etcdserver: leader changed")

func deadlineOf(ctx context.Context, def time.Duration) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(def)
}

// notSent reports whether a peer RPC failed before the peer could act on it.
func notSent(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	if st.Code() == codes.FailedPrecondition && st.Message() == errNotLeaderMsg {
		return true
	}
	if st.Code() == codes.Unavailable {
		m := st.Message()
		return strings.Contains(m, "connection refused") || strings.Contains(m, "error while dialing") ||
			strings.Contains(m, "Error while dialing") || strings.Contains(m, "no such host")
	}
	return false
}

const errNotLeaderMsg = "raftstore: not the leader"

// linearizableRead returns once this replica's state includes every write
// committed before it was called.
func (s *Server) linearizableRead(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	for {
		changed := s.leaderSig.wait()
		index, err := s.reads.get(ctx)
		if err == nil {
			return s.fsm.waiter.wait(ctx, index)
		}
		if ctx.Err() != nil {
			return s.timeoutError(ctx.Err())
		}
		select {
		case <-changed:
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return s.timeoutError(ctx.Err())
		}
	}
}

// leaderReadIndex obtains a read index for a batch of readers: on the
// leader by confirming leadership with a quorum round, on a follower by
// asking the leader.
func (s *Server) leaderReadIndex(ctx context.Context) (uint64, error) {
	if s.raft.State() == raft.Leader {
		return s.localReadIndex(ctx)
	}
	addr, _ := s.leader()
	if addr == "" {
		return 0, ErrNoLeader
	}
	conn, err := s.peers.get(string(addr))
	if err != nil {
		return 0, err
	}
	ctx, cancel := s.untilLeaderChange(ctx, s.cfg.RequestTimeout)
	defer cancel()
	out := new(wrapperspb.UInt64Value)
	if err := conn.Invoke(ctx, peerMethodReadIndex, &wrapperspb.UInt64Value{}, out); err != nil {
		return 0, err
	}
	return out.Value, nil
}

// localReadIndex is the read index on the leader: the commit index seen
// before a quorum confirms this replica still leads.
//
// The confirmation is our own round (confirmTerm) rather than
// raft.VerifyLeader: VerifyLeader counts any heartbeat or append reply
// that arrives after it starts, including replies to requests sent before
// it, such as ones left in a socket while this process was paused. A
// deposed leader resumed from SIGSTOP could then serve a stale read.
func (s *Server) localReadIndex(ctx context.Context) (uint64, error) {
	term := s.raft.CurrentTerm()
	if !s.ready.Load() || s.readyTerm.Load() != term || s.raft.State() != raft.Leader {
		return 0, errNotReady
	}
	index := s.raft.CommitIndex()
	if err := s.confirmTerm(ctx, term); err != nil {
		return 0, err
	}
	return index, nil
}

// confirmTerm returns nil once a quorum of voters, this replica included,
// answers a request sent now that it is still in term. Any leader of a
// later term needs a quorum that voted in that term, and terms only grow,
// so no later leader existed when the request went out: every write
// committed before then is at or below this leader's commit index.
func (s *Server) confirmTerm(ctx context.Context, term uint64) error {
	cfg := s.raft.GetConfiguration().Configuration()
	self := raft.ServerID(memberIDString(s.meta.MemberID))
	var others []raft.Server
	voters := 0
	for _, srv := range cfg.Servers {
		if srv.Suffrage != raft.Voter {
			continue
		}
		voters++
		if srv.ID != self {
			others = append(others, srv)
		}
	}
	need := voters / 2 // of a quorum of voters/2+1, this replica is one
	if need <= 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan error, len(others))
	for _, srv := range others {
		go func() {
			conn, err := s.peers.get(string(srv.Address))
			if err != nil {
				answers <- err
				return
			}
			out := new(wrapperspb.UInt64Value)
			if err := conn.Invoke(ctx, peerMethodTerm, &wrapperspb.UInt64Value{Value: term}, out); err != nil {
				answers <- err
				return
			}
			if out.Value != term {
				answers <- fmt.Errorf("raftstore: voter %s is in term %d, this leader in %d: %w", srv.ID, out.Value, term, errNotReady)
				return
			}
			answers <- nil
		}()
	}
	yes, no := 0, 0
	var firstErr error
	for range others {
		err := <-answers
		if err == nil {
			if yes++; yes >= need {
				return nil
			}
			continue
		}
		if firstErr == nil {
			firstErr = err
		}
		if no++; len(others)-no < need {
			break
		}
	}
	return fmt.Errorf("raftstore: a quorum did not confirm this leader's term %d: %w", term, firstErr)
}

var errNotReady = status.Error(codes.FailedPrecondition, errNotLeaderMsg)

// readIndexBatcher shares one read-index round among all readers that
// arrive while the previous round is in flight, as etcd does.
type readIndexBatcher struct {
	fetch func(ctx context.Context) (uint64, error)

	mu      sync.Mutex
	pending []chan readIndexResult
	running bool
}

type readIndexResult struct {
	index uint64
	err   error
}

func newReadIndexBatcher(fetch func(ctx context.Context) (uint64, error)) *readIndexBatcher {
	return &readIndexBatcher{fetch: fetch}
}

func (b *readIndexBatcher) get(ctx context.Context) (uint64, error) {
	ch := make(chan readIndexResult, 1)
	b.mu.Lock()
	b.pending = append(b.pending, ch)
	if !b.running {
		b.running = true
		go b.run()
	}
	b.mu.Unlock()
	select {
	case r := <-ch:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (b *readIndexBatcher) run() {
	for {
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		if len(batch) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		index, err := b.fetch(ctx)
		cancel()
		for _, ch := range batch {
			ch <- readIndexResult{index: index, err: err}
		}
	}
}

// signal is a broadcast that fires (closes its channel) on every event.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) fire() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}
