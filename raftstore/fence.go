package raftstore

import (
	"context"

	"cairn/internal/fence"
)

// LeaderFenceKey is the store key that holds the current leadership epoch
// in decimal. Every new leader's barrier rewrites it through Raft, so a
// write that must come from the current leader compares this key's value
// with the epoch it was started under: a deposed leader's compare fails
// deterministically on every replica.
const LeaderFenceKey = fence.KeyPrefix + fence.LeaderName

// Leadership describes this replica's leadership once its barrier has
// been applied.
type Leadership struct {
	// Epoch is the leadership epoch this replica committed.
	Epoch uint64
	// Context ends when this replica loses leadership or stops.
	Context context.Context
}

// Leadership returns this replica's current leadership, and false when it
// is not an established leader. Changed fires whenever that may differ.
func (s *Server) Leadership() (Leadership, bool) {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.lead == nil || s.lead.Context.Err() != nil {
		return Leadership{}, false
	}
	return *s.lead, true
}

// LeadershipChanged returns a channel that is closed at the next leader
// change seen by this replica (including its own barrier completing).
func (s *Server) LeadershipChanged() <-chan struct{} { return s.leaderSig.wait() }
