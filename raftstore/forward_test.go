package raftstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"cairn/raftstore/transport"
)

type answerSeen struct {
	answer []byte
	sent   bool
	err    error
}

func recordAnswer(ch chan<- answerSeen) answerFunc {
	return func(answer []byte, sent bool, err error) { ch <- answerSeen{answer, sent, err} }
}

func waitAnswer(t *testing.T, ch <-chan answerSeen) answerSeen {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5s")
		return answerSeen{}
	}
}

func TestLeaderConnMatchesAnswersToTheirBatches(t *testing.T) {
	follower, leader := net.Pipe()
	lc := newLeaderConn("leader", follower, 1<<20, nil)
	defer lc.close()

	first, second := make(chan answerSeen, 1), make(chan answerSeen, 1)
	r := bufio.NewReader(leader)
	go lc.send([]byte("one"), time.Now().Add(5*time.Second), recordAnswer(first))
	id1, body1, err := readMessage(r, 1<<20)
	if err != nil || string(body1) != "one" {
		t.Fatalf("leader read %q, %v", body1, err)
	}
	go lc.send([]byte("two"), time.Now().Add(5*time.Second), recordAnswer(second))
	id2, body2, err := readMessage(r, 1<<20)
	if err != nil || string(body2) != "two" {
		t.Fatalf("leader read %q, %v", body2, err)
	}
	// The leader answers the second batch first.
	if _, err := writeMessage(leader, id2, []byte("answer two")); err != nil {
		t.Fatal(err)
	}
	if _, err := writeMessage(leader, id1, []byte("answer one")); err != nil {
		t.Fatal(err)
	}
	if a := waitAnswer(t, second); a.err != nil || string(a.answer) != "answer two" {
		t.Errorf("second batch got %q, %v", a.answer, a.err)
	}
	if a := waitAnswer(t, first); a.err != nil || string(a.answer) != "answer one" {
		t.Errorf("first batch got %q, %v", a.answer, a.err)
	}
}

func TestLeaderConnLossFailsBatchesInFlight(t *testing.T) {
	follower, leader := net.Pipe()
	lc := newLeaderConn("leader", follower, 1<<20, nil)
	inFlight := make(chan answerSeen, 1)
	go lc.send([]byte("batch"), time.Now().Add(5*time.Second), recordAnswer(inFlight))
	if _, _, err := readMessage(bufio.NewReader(leader), 1<<20); err != nil {
		t.Fatal(err)
	}
	leader.Close()

	// The leader read the batch: it may have applied it.
	a := waitAnswer(t, inFlight)
	if !errors.Is(a.err, errForwardConnLost) || !a.sent {
		t.Errorf("batch in flight: sent=%v err=%v, want sent and %v", a.sent, a.err, errForwardConnLost)
	}
	if !lc.isBroken() {
		t.Fatal("connection not marked broken after the leader closed it")
	}
	// Nothing of a later batch can reach the leader: safe to retry.
	later := make(chan answerSeen, 1)
	lc.send([]byte("later"), time.Now().Add(5*time.Second), recordAnswer(later))
	if a := waitAnswer(t, later); a.sent || a.err == nil {
		t.Errorf("batch on a broken connection: sent=%v err=%v, want not sent and an error", a.sent, a.err)
	}
}

func TestLeaderConnRefusesAnOversizedAnswer(t *testing.T) {
	follower, leader := net.Pipe()
	lc := newLeaderConn("leader", follower, 16, nil)
	inFlight := make(chan answerSeen, 1)
	go lc.send([]byte("batch"), time.Now().Add(5*time.Second), recordAnswer(inFlight))
	id, _, err := readMessage(bufio.NewReader(leader), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	go writeMessage(leader, id, make([]byte, 17))
	if a := waitAnswer(t, inFlight); a.err == nil {
		t.Errorf("an answer over the limit was accepted: %q", a.answer)
	}
}

// A follower whose connection to the leader broke dials again on its next
// write, and the leader drops a connection that claims a message larger
// than any batch, instead of allocating for it.
func TestForwardedWritesRedialAndRefuseOversizedBatches(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.waitLeader()
	follower := (leader + 1) % 3
	cli := c.client(follower)
	if _, err := cli.Put(ctxT(t), "k", "before"); err != nil {
		t.Fatal(err)
	}
	c.servers[follower].forwarder.closeConn("")
	if _, err := cli.Put(ctxT(t), "k", "after"); err != nil {
		t.Fatalf("write after the leader connection was closed: %v", err)
	}
	resp, err := c.client(leader).Get(ctxT(t), "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "after" {
		t.Fatalf("leader has %v, %v; want k=after", resp, err)
	}

	raw, err := transport.DialPeer(ctxT(t), c.peers[leader].Address, c.cfgs[follower].TLS.peerClient(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	msg := []byte{transport.ProposeFirstByte}
	msg = binary.AppendUvarint(msg, 1)
	msg = binary.AppendUvarint(msg, 1<<40)
	if _, err := raw.Write(msg); err != nil {
		t.Fatal(err)
	}
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := raw.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("the leader kept a connection that announced a 1 TiB batch (read %d, %v)", n, err)
	}
}

// A follower that sees the leader's process gone (its connection reset,
// its port refusing) elects a new leader well before the heartbeat
// timeout, which is otherwise the least silence it waits, and then
// returns to the configured timeouts.
func TestStoppedLeaderIsReplacedBeforeTheHeartbeatTimeout(t *testing.T) {
	const timeout = 3 * time.Second
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.HeartbeatTimeout, cfg.ElectionTimeout = timeout, timeout })
	old := c.waitLeader()
	var followers []*Server
	for i, s := range c.servers {
		if i != old {
			followers = append(followers, s)
		}
	}
	waitFor(t, func() bool {
		for _, s := range followers {
			s.forwarder.mu.Lock()
			conn := s.forwarder.conn
			s.forwarder.mu.Unlock()
			if conn == nil || conn.isBroken() {
				return false
			}
		}
		return true
	})

	start := time.Now()
	c.crash(old)
	c.waitLeader()
	if took := time.Since(start); took >= timeout {
		t.Fatalf("a new leader took %v after the leader stopped; the followers waited out the %v heartbeat timeout", took, timeout)
	} else {
		t.Logf("new leader %v after the leader stopped (heartbeat timeout %v)", took.Round(time.Millisecond), timeout)
	}
	waitFor(t, func() bool {
		for _, s := range followers {
			if rc := s.raft.ReloadableConfig(); rc.HeartbeatTimeout != timeout || rc.ElectionTimeout != timeout {
				return false
			}
		}
		return true
	})
}
