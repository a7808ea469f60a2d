package raftstore

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// A follower waits for HeartbeatTimeout of silence before it elects a new
// leader, and hashicorp/raft checks for that silence on a timer of one to
// two timeouts: a dead leader is replaced 1–3 timeouts after it died.
// When only the leader's process died (kill -9, a crash) and its machine
// lives on, there is a much earlier sign: every connection to it is reset
// at once, and its peer port refuses new ones. A follower that sees this
// shortens its timeouts until a new leader is known, and the election
// starts a few hundred milliseconds after the crash. A leader that is
// merely unreachable (a dead machine, a partition) refuses nothing, so
// it is still replaced on the configured timeouts.

// electionHastener shortens a follower's Raft timeouts after the leader's
// process is seen gone, and restores them once another leader is known.
type electionHastener struct {
	s      *Server
	active atomic.Bool
}

// hastenedTimeout is the heartbeat and election timeout while hastened:
// a quarter of the configured one, but no less than the leader lease,
// which hashicorp/raft requires.
func (h *electionHastener) hastenedTimeout() time.Duration {
	return max(h.s.cfg.HeartbeatTimeout/4, h.s.cfg.LeaderLeaseTimeout)
}

// leaderConnLost is called when this follower's connection to the leader
// at addr broke without this side closing it.
func (h *electionHastener) leaderConnLost(addr string) {
	s := h.s
	if cur, _ := s.leader(); string(cur) != addr || s.raft.State() != raft.Follower {
		return
	}
	if !refusesConnections(addr) {
		return
	}
	short := h.hastenedTimeout()
	if short >= s.cfg.HeartbeatTimeout || !h.active.CompareAndSwap(false, true) {
		return
	}
	if err := h.setTimeouts(short, short); err != nil {
		s.log.Warn("could not shorten the election timeouts", "err", err)
		h.active.Store(false)
		return
	}
	s.log.Warn("the leader's process is gone (its peer port refuses connections); electing a new leader sooner",
		"leader_addr", addr, "heartbeat_timeout", short)
	go h.restoreWhenLed(addr)
}

// restoreWhenLed puts the configured timeouts back once a leader other
// than dead is known, or after a while if none is (a false alarm).
func (h *electionHastener) restoreWhenLed(dead string) {
	if !h.awaitLeaderOtherThan(dead) {
		return // stopping
	}
	if err := h.setTimeouts(h.s.cfg.HeartbeatTimeout, h.s.cfg.ElectionTimeout); err != nil {
		h.s.log.Error("could not restore the election timeouts", "err", err)
	}
	h.active.Store(false)
}

// awaitLeaderOtherThan returns true once a leader other than dead is
// known or ten heartbeat timeouts passed, false if the server stops.
func (h *electionHastener) awaitLeaderOtherThan(dead string) bool {
	s := h.s
	giveUp := time.After(10 * s.cfg.HeartbeatTimeout)
	for {
		changed := s.leaderSig.wait()
		if cur, _ := s.leader(); cur != "" && string(cur) != dead {
			return true
		}
		select {
		case <-changed:
		case <-giveUp:
			return true
		case <-s.ctx.Done():
			return false
		}
	}
}

func (h *electionHastener) setTimeouts(heartbeat, election time.Duration) error {
	rc := h.s.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = heartbeat, election
	return h.s.raft.ReloadConfig(rc)
}

// refusesConnections reports whether addr actively refuses a TCP
// connection: its host answers, and nothing listens on the port.
func refusesConnections(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
