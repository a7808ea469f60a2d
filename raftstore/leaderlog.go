package raftstore

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// hashicorp/raft writes the leader's new entries to its disk (one fsync)
// and only then sends them to the followers, so a commit waits for two
// fsyncs one after the other. etcd sends first and writes in parallel
// (Raft thesis §10.2.1). leaderLog does the same under hashicorp/raft: on
// the leader, StoreLogs hands the entries to a writer goroutine and returns
// at once, so that Raft replicates them while they are being written.
//
// Raft then counts the leader's copy before it is on disk, which is safe
// only while nothing acts on a commit the leader's disk has not caught up
// with. Two gates see to that: the FSM applies an entry (and so answers a
// client or serves a read) only once it is durable here (waitDurable), and
// no AppendEntries tells a follower of a commit index beyond it
// (durableCommitTransport). A commit that is lost with the leader's
// machine was thus never seen by anyone. Configuration entries, and every
// write while this replica follows, go to disk before StoreLogs returns.
type leaderLog struct {
	store    raft.LogStore // guarded by mu
	isLeader func() bool   // set once Raft runs; nil before

	mu       sync.Mutex
	cond     *sync.Cond    // broadcast on every change below
	pending  []*raft.Log   // handed to the writer, not yet durable; contiguous
	durable  uint64        // every entry up to this index is on disk
	writing  bool          // the writer holds entries taken from pending
	closed   bool          // Close was called
	err      error         // the writer's failure; fatal
	lastSeen atomic.Uint64 // durable, for lock-free readers
	done     chan struct{} // closed when the writer has stopped
	fatal    func(error)   // called once the writer fails
}

// leaderLogMaxPending bounds the entries waiting for the writer: a slow
// disk then slows the leader's dispatch instead of growing memory.
const leaderLogMaxPending = 8192

func newLeaderLog(store raft.LogStore, fatal func(error)) (*leaderLog, error) {
	last, err := store.LastIndex()
	if err != nil {
		return nil, err
	}
	l := &leaderLog{store: store, durable: last, done: make(chan struct{}), fatal: fatal}
	l.cond = sync.NewCond(&l.mu)
	l.lastSeen.Store(last)
	go l.writer()
	return l, nil
}

// setLeaderCheck turns on parallel writes: isLeader reports whether this
// replica's Raft leads, and so whether StoreLogs comes from its dispatch.
func (l *leaderLog) setLeaderCheck(isLeader func() bool) {
	l.mu.Lock()
	l.isLeader = isLeader
	l.mu.Unlock()
}

func (l *leaderLog) FirstIndex() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first, err := l.store.FirstIndex()
	if err == nil && first == 0 && len(l.pending) > 0 {
		first = l.pending[0].Index
	}
	return first, err
}

func (l *leaderLog) LastIndex() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.pending); n > 0 {
		return l.pending[n-1].Index, nil
	}
	return l.store.LastIndex()
}

func (l *leaderLog) GetLog(index uint64, out *raft.Log) error {
	l.mu.Lock()
	if n := len(l.pending); n > 0 && index >= l.pending[0].Index && index <= l.pending[n-1].Index {
		*out = *l.pending[index-l.pending[0].Index]
		l.mu.Unlock()
		return nil
	}
	store := l.store
	l.mu.Unlock()
	return store.GetLog(index, out)
}

func (l *leaderLog) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

func (l *leaderLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.parallel(logs) {
		for len(l.pending) >= leaderLogMaxPending && l.err == nil {
			l.cond.Wait()
		}
		if l.err != nil {
			return l.err
		}
		if n := len(l.pending); n > 0 && logs[0].Index != l.pending[n-1].Index+1 {
			return fmt.Errorf("raftstore: log entry %d does not follow pending entry %d", logs[0].Index, l.pending[n-1].Index)
		}
		l.pending = append(l.pending, logs...)
		l.cond.Broadcast()
		return nil
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	if err := l.store.StoreLogs(logs); err != nil {
		return err
	}
	l.setDurableLocked(logs[len(logs)-1].Index)
	return nil
}

// parallel reports whether logs come from the leader's dispatch and may
// be written while they replicate.
func (l *leaderLog) parallel(logs []*raft.Log) bool {
	if l.isLeader == nil || l.closed || !l.isLeader() {
		return false
	}
	for _, e := range logs {
		if e.Type == raft.LogConfiguration {
			return false
		}
	}
	return true
}

func (l *leaderLog) DeleteRange(min, max uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.flushLocked(); err != nil {
		return err
	}
	if err := l.store.DeleteRange(min, max); err != nil {
		return err
	}
	if max >= l.durable && min <= l.durable {
		// The tail was cut (a follower dropping a deposed leader's
		// entries): the indexes past it will be written anew.
		l.durable = min - 1
		l.lastSeen.Store(l.durable)
	}
	return nil
}

// flushLocked waits until the writer has written everything pending.
func (l *leaderLog) flushLocked() error {
	for (len(l.pending) > 0 || l.writing) && l.err == nil {
		l.cond.Wait()
	}
	return l.err
}

func (l *leaderLog) setDurableLocked(index uint64) {
	l.durable = index
	l.lastSeen.Store(index)
	l.cond.Broadcast()
}

// writer writes pending entries in order, as many at once as have queued.
func (l *leaderLog) writer() {
	defer close(l.done)
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for len(l.pending) == 0 && !l.closed {
			l.cond.Wait()
		}
		if len(l.pending) == 0 {
			return
		}
		batch, store := l.pending, l.store
		l.writing = true
		l.mu.Unlock()
		err := store.StoreLogs(batch)
		l.mu.Lock()
		l.writing = false
		if err != nil {
			l.err = fmt.Errorf("raftstore: writing the Raft log: %w", err)
			l.cond.Broadcast()
			l.mu.Unlock()
			l.fatal(l.err)
			l.mu.Lock()
			return
		}
		l.pending = l.pending[len(batch):]
		if len(l.pending) == 0 {
			l.pending = nil
		}
		l.setDurableLocked(batch[len(batch)-1].Index)
	}
}

// waitDurable returns once the entry at index is on this replica's disk.
func (l *leaderLog) waitDurable(index uint64) error {
	if l.lastSeen.Load() >= index {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.durable < index && l.err == nil {
		l.cond.Wait()
	}
	return l.err
}

// durableIndex is the last index known to be on this replica's disk.
func (l *leaderLog) durableIndex() uint64 { return l.lastSeen.Load() }

// Close writes what is pending and stops the writer. It leaves the store
// open: its owner closes it.
func (l *leaderLog) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.done
	return l.err
}

// durableCommitTransport tells followers of no commit index beyond what
// the leader's own disk holds (see leaderLog).
type durableCommitTransport struct {
	*raft.NetworkTransport
	durable func() uint64
}

func (t *durableCommitTransport) clamp(args *raft.AppendEntriesRequest) *raft.AppendEntriesRequest {
	if d := t.durable(); args.LeaderCommitIndex > d {
		c := *args
		c.LeaderCommitIndex = d
		return &c
	}
	return args
}

func (t *durableCommitTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return t.NetworkTransport.AppendEntries(id, target, t.clamp(args), resp)
}

func (t *durableCommitTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	d := &durableCommitPipeline{AppendPipeline: p, t: t, out: make(chan raft.AppendFuture), stop: make(chan struct{})}
	go d.forward()
	return d, nil
}

// durableCommitPipeline also takes every answer off the pipeline as it
// arrives. hashicorp/raft's pipeline hands answers over on an unbuffered
// channel, and its reader stops at the first refusal or newer term while
// the sender may still send once more: that send then waits for the
// pipeline's decoder, which waits for the gone reader, and the leader's
// replication (and its shutdown) hangs. A leader handing leadership over
// meets a newer term every time.
type durableCommitPipeline struct {
	raft.AppendPipeline
	t         *durableCommitTransport
	out       chan raft.AppendFuture
	stop      chan struct{}
	closeOnce sync.Once
}

func (p *durableCommitPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	return p.AppendPipeline.AppendEntries(p.t.clamp(args), resp)
}

func (p *durableCommitPipeline) Consumer() <-chan raft.AppendFuture { return p.out }

func (p *durableCommitPipeline) Close() error {
	p.closeOnce.Do(func() { close(p.stop) })
	return p.AppendPipeline.Close()
}

// forward queues answers until Raft reads them, so the decoder never waits.
func (p *durableCommitPipeline) forward() {
	in := p.AppendPipeline.Consumer()
	var queue []raft.AppendFuture
	for {
		var out chan raft.AppendFuture
		var next raft.AppendFuture
		if len(queue) > 0 {
			out, next = p.out, queue[0]
		}
		select {
		case f := <-in:
			queue = append(queue, f)
		case out <- next:
			queue = queue[1:]
		case <-p.stop:
			return
		}
	}
}
