package raftstore

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// watchLeadership follows Raft's leader changes: it logs them, fires the
// leader-change signal and, on this replica becoming leader, applies the
// leader barrier before declaring itself ready.
func (s *Server) watchLeadership() {
	obsCh := make(chan raft.Observation, 16)
	obs := raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(obs)
	defer s.raft.DeregisterObserver(obs)

	var cancelLead context.CancelFunc
	defer func() {
		if cancelLead != nil {
			cancelLead()
		}
	}()
	lastLeader := raft.ServerID("")
	for {
		select {
		case <-s.ctx.Done():
			return
		case o := <-obsCh:
			lo := o.Data.(raft.LeaderObservation)
			s.leaderSig.fire()
			term := s.raft.CurrentTerm()
			switch {
			case lo.LeaderID == "":
				reason := "the leader stepped down or a newer term began (e.g. a leadership transfer)"
				if time.Since(s.raft.LastContact()) >= s.cfg.HeartbeatTimeout {
					reason = fmt.Sprintf("no heartbeat from the leader for %v (heartbeat timeout %v)",
						time.Since(s.raft.LastContact()).Round(time.Millisecond), s.cfg.HeartbeatTimeout)
				}
				s.log.Warn("lost the leader; an election follows", "previous_leader", string(lastLeader), "term", term, "reason", reason)
			case lo.LeaderID == raft.ServerID(memberIDString(s.meta.MemberID)):
				s.log.Info("became leader", "term", term, "reason", "won the election with a quorum of votes")
			default:
				s.log.Info("following leader", "leader", string(lo.LeaderID), "leader_addr", string(lo.LeaderAddr), "term", term)
			}
			if lo.LeaderID != lastLeader && lo.LeaderID != "" {
				s.metrics.leaderChanges.Inc()
			}
			lastLeader = lo.LeaderID
			isLeader := lo.LeaderID == raft.ServerID(memberIDString(s.meta.MemberID))
			if isLeader && cancelLead == nil {
				var ctx context.Context
				ctx, cancelLead = context.WithCancel(s.ctx)
				go s.establishLeadership(ctx)
			}
			if !isLeader && cancelLead != nil {
				cancelLead()
				cancelLead = nil
				s.revokeLeadership()
			}
		}
	}
}

// establishLeadership applies the leader barrier (which also bumps the
// leadership epoch) and then marks this replica ready for leader-only work.
func (s *Server) establishLeadership(ctx context.Context) {
	for ctx.Err() == nil {
		term := s.raft.CurrentTerm()
		data, _ := encodeCommand(cmdLeaderBarrier, &pb.RequestHeader{ID: s.meta.MemberID})
		f := s.raft.Apply(data, s.cfg.RequestTimeout)
		if err := s.awaitApplied(f); err != nil {
			if s.raft.State() != raft.Leader {
				return
			}
			s.log.Warn("leader barrier failed, retrying", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if s.raft.CurrentTerm() != term {
			// Leadership was lost and won again while the barrier was in
			// flight: the read index must come from a barrier of this term.
			continue
		}
		s.lessor.promote()
		epoch := f.Response().(*applyResult).resp.(*pb.ResponseHeader).RaftTerm
		s.leadMu.Lock()
		s.lead = &Leadership{Epoch: epoch, Context: ctx}
		s.leadMu.Unlock()
		s.readyTerm.Store(term)
		s.ready.Store(true)
		s.metrics.isLeader.Set(1)
		s.leaderSig.fire()
		s.log.Info("leadership established", "epoch", epoch)
		return
	}
}

func (s *Server) revokeLeadership() {
	s.ready.Store(false)
	s.readyTerm.Store(0)
	s.leadMu.Lock()
	s.lead = nil
	s.leadMu.Unlock()
	s.metrics.isLeader.Set(0)
	s.lessor.demote()
	s.log.Info("stepped down from leadership", "term", s.raft.CurrentTerm())
}

// publishAttrs records this member's name and client URL in the replicated
// member table, so MemberList shows them, retrying until it lands.
func (s *Server) publishAttrs() {
	want := &pb.Member{ID: s.meta.MemberID, Name: s.cfg.Name, ClientURLs: []string{s.clientURL()}}
	for {
		if m, ok := s.fsm.memberAttrs(s.meta.MemberID); ok && m.Name == want.Name && len(m.ClientURLs) == 1 && m.ClientURLs[0] == want.ClientURLs[0] {
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		_, err := s.propose(ctx, cmdMemberAttrs, want)
		cancel()
		if err == nil {
			s.log.Info("published member attributes", "client_url", want.ClientURLs[0])
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Server) clientURL() string {
	if s.cfg.TLS == nil {
		return "http://" + s.cfg.AdvertiseStore
	}
	return "https://" + s.cfg.AdvertiseStore
}

func (s *Server) peerURL() string {
	return peerURLFor(s.cfg.AdvertisePeer, s.cfg.TLS != nil)
}

func peerURLFor(addr string, secure bool) string {
	if secure {
		return "https://" + addr
	}
	return "http://" + addr
}

// watchQuota raises the NOSPACE alarm once the store exceeds its quota, as
// etcd does; writes are then refused until an operator compacts and
// disarms it.
func (s *Server) watchQuota() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		size := s.dbSize()
		s.metrics.dbSize.Set(float64(size))
		if !s.ready.Load() || size <= s.cfg.QuotaBytes || s.fsm.noSpace() {
			continue
		}
		s.log.Warn("store exceeds its quota: raising NOSPACE alarm; writes are refused until you compact, defragment and disarm",
			"size", size, "quota", s.cfg.QuotaBytes)
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		_, err := s.propose(ctx, cmdAlarm, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: s.meta.MemberID, Alarm: pb.AlarmType_NOSPACE})
		cancel()
		if err != nil {
			s.log.Warn("raising NOSPACE alarm failed", "err", err)
		}
	}
}
