package raftstore

import (
	"errors"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb"
)

// heldStore is a real Raft log store whose writes the test can hold back,
// to look at leaderLog while its writer is on the disk.
type heldStore struct {
	raft.LogStore
	hold    chan struct{} // a write waits for a token when non-nil
	started chan struct{}
}

func (h *heldStore) StoreLogs(logs []*raft.Log) error {
	if h.hold != nil {
		select {
		case h.started <- struct{}{}:
		default:
		}
		<-h.hold
	}
	return h.LogStore.StoreLogs(logs)
}

func newHeldLog(t *testing.T) (*leaderLog, *heldStore, *raftboltdb.BoltStore) {
	t.Helper()
	b, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	h := &heldStore{LogStore: b}
	l, err := newLeaderLog(h, func(err error) { t.Errorf("writer failed: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, h, b
}

func entries(from, to uint64, typ raft.LogType) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Type: typ, Data: []byte{byte(i)}})
	}
	return out
}

func TestLeaderLogReplicatesWhileItWrites(t *testing.T) {
	l, h, disk := newHeldLog(t)
	var leading atomic.Bool
	l.setLeaderCheck(leading.Load)
	if err := l.StoreLogs(entries(1, 2, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	if l.durableIndex() != 2 {
		t.Fatalf("a follower's write returned before it was durable (durable %d)", l.durableIndex())
	}

	leading.Store(true)
	h.hold, h.started = make(chan struct{}), make(chan struct{}, 1)
	if err := l.StoreLogs(entries(3, 5, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	<-h.started
	// The writer is on the disk: Raft must still see the entries, and
	// nothing may count them as durable.
	var got raft.Log
	if err := l.GetLog(4, &got); err != nil || got.Data[0] != 4 {
		t.Fatalf("GetLog(4) of a pending entry = %+v, %v", got, err)
	}
	if last, _ := l.LastIndex(); last != 5 {
		t.Fatalf("LastIndex = %d, want 5 (pending entries count)", last)
	}
	if l.durableIndex() != 2 {
		t.Fatalf("durable %d while the write is held, want 2", l.durableIndex())
	}
	if err := disk.GetLog(3, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("entry 3 on disk before the writer wrote it: %v", err)
	}
	// Entries that queue meanwhile go in the writer's next batch.
	if err := l.StoreLogs(entries(6, 6, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- l.waitDurable(6) }()
	select {
	case err := <-waited:
		t.Fatalf("waitDurable(6) returned %v before the write", err)
	case <-time.After(50 * time.Millisecond):
	}
	h.hold <- struct{}{} // entries 3-5
	<-h.started
	h.hold <- struct{}{} // entry 6
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 6; i++ {
		if err := disk.GetLog(i, &got); err != nil || got.Index != i {
			t.Fatalf("entry %d on disk: %+v, %v", i, got, err)
		}
	}
}

// A configuration entry, and every cut of the log, first waits for the
// entries before it: the log on disk never has a hole or an old tail.
func TestLeaderLogKeepsOrderForConfigurationsAndCuts(t *testing.T) {
	l, h, disk := newHeldLog(t)
	l.setLeaderCheck(func() bool { return true })
	h.hold, h.started = make(chan struct{}), make(chan struct{}, 1)
	if err := l.StoreLogs(entries(1, 3, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	<-h.started
	stored := make(chan error, 1)
	go func() { stored <- l.StoreLogs(entries(4, 4, raft.LogConfiguration)) }()
	select {
	case err := <-stored:
		t.Fatalf("a configuration entry was stored (%v) before the entries it follows", err)
	case <-time.After(50 * time.Millisecond):
	}
	h.hold <- struct{}{} // 1-3
	<-h.started
	h.hold <- struct{}{} // 4, written before StoreLogs returns
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	if l.durableIndex() != 4 {
		t.Fatalf("durable %d after a configuration entry, want 4", l.durableIndex())
	}

	h.hold = nil
	if err := l.StoreLogs(entries(5, 6, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	// A new leader's entries replace 5-6: the cut waits for them to be
	// written, and durable goes back to what stays.
	if err := l.DeleteRange(5, 6); err != nil {
		t.Fatal(err)
	}
	if last, _ := disk.LastIndex(); last != 4 {
		t.Fatalf("last index on disk after the cut = %d, want 4", last)
	}
	if l.durableIndex() != 4 {
		t.Fatalf("durable %d after cutting 5-6, want 4", l.durableIndex())
	}
}

func TestLeaderLogStopsOnAWriteFailure(t *testing.T) {
	b, err := raftboltdb.NewBoltStore(filepath.Join(t.TempDir(), "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	l, err := newLeaderLog(b, func(err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	l.setLeaderCheck(func() bool { return true })
	b.Close() // every write now fails
	if err := l.StoreLogs(entries(1, 1, raft.LogCommand)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		t.Logf("writer: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a failed write did not stop the writer")
	}
	if err := l.waitDurable(1); err == nil {
		t.Fatal("waitDurable succeeded for an entry that was never written")
	}
	if err := l.StoreLogs(entries(2, 2, raft.LogCommand)); err == nil {
		t.Fatal("StoreLogs accepted entries after the log failed")
	}
}

func TestFollowersLearnOnlyDurableCommits(t *testing.T) {
	durable := uint64(7)
	tr := &durableCommitTransport{durable: func() uint64 { return durable }}
	req := &raft.AppendEntriesRequest{LeaderCommitIndex: 9, Entries: entries(8, 9, raft.LogCommand)}
	out := tr.clamp(req)
	if out.LeaderCommitIndex != 7 || len(out.Entries) != 2 {
		t.Fatalf("clamped request: commit %d, %d entries; want 7, 2", out.LeaderCommitIndex, len(out.Entries))
	}
	if req.LeaderCommitIndex != 9 {
		t.Fatal("clamp changed Raft's own request")
	}
	durable = 9
	if tr.clamp(req) != req {
		t.Fatal("a durable commit index was changed")
	}
}

// On a real cluster: while the leader's own write of an entry is held,
// the followers hold the entry and Raft counts it committed, yet the
// client gets no answer and no follower applies it.
func TestNothingActsOnACommitTheLeadersDiskLacks(t *testing.T) {
	c := newTestCluster(t, 3)
	li := c.waitLeader()
	s := c.servers[li]
	cli := c.client(li)
	if _, err := cli.Put(ctxT(t), "warm", "up"); err != nil {
		t.Fatal(err)
	}
	h := &heldStore{hold: make(chan struct{}), started: make(chan struct{}, 1)}
	ll := s.leaderLog
	ll.mu.Lock()
	h.LogStore, ll.store = ll.store, h
	ll.mu.Unlock()
	released := false
	release := func() {
		if !released {
			released = true
			close(h.hold)
		}
	}
	defer release()

	before := s.raft.LastIndex()
	put := make(chan error, 1)
	go func() { _, err := cli.Put(ctxT(t), "held", "v"); put <- err }()
	<-h.started
	var idx uint64
	waitFor(t, func() bool { idx = s.raft.LastIndex(); return idx > before })
	waitFor(t, func() bool {
		if s.raft.CommitIndex() < idx {
			return false
		}
		for i, f := range c.servers {
			if i != li && f.raft.LastIndex() < idx {
				return false
			}
		}
		return true
	})
	time.Sleep(20 * s.cfg.CommitTimeout) // several rounds of AppendEntries
	for i, f := range c.servers {
		if i != li && f.fsm.applied.Load() >= idx {
			t.Fatalf("follower %d applied entry %d while the leader's disk lacks it", i, idx)
		}
	}
	if s.fsm.applied.Load() >= idx {
		t.Fatalf("the leader applied entry %d before it was on its disk", idx)
	}
	select {
	case err := <-put:
		t.Fatalf("the put was answered (%v) before the leader's disk held it", err)
	default:
	}

	release()
	if err := <-put; err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		for _, f := range c.servers {
			if f.fsm.applied.Load() < idx {
				return false
			}
		}
		return true
	})
}

// Raft stops reading a pipeline's answers at the first refusal or newer
// term, and may send once more before it notices: that send must not wait
// for a reader that is gone.
func TestPipelineSendsDoNotWaitForAGoneReader(t *testing.T) {
	follower, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	go func() {
		for rpc := range follower.Consumer() {
			rpc.Respond(&raft.AppendEntriesResponse{Term: 2, Success: false}, nil)
		}
	}()
	leader, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	tr := &durableCommitTransport{NetworkTransport: leader, durable: func() uint64 { return 0 }}
	p, err := tr.AppendEntriesPipeline("f", follower.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sent := make(chan error, 1)
	go func() {
		// Nobody reads p.Consumer(), as after Raft's reader stopped.
		for range 4 {
			if _, err := p.AppendEntries(&raft.AppendEntriesRequest{Term: 1}, new(raft.AppendEntriesResponse)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a pipeline send waited for an answer reader that is gone")
	}
	select {
	case f := <-p.Consumer():
		if f.Response().Term != 2 {
			t.Fatalf("first answer: %+v", f.Response())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the queued answers were lost")
	}
}
