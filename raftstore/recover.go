package raftstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// forcedNewCluster records, in a data dir's identity, that an operator
// restarted the member alone with --force-new-cluster.
type forcedNewCluster struct {
	At time.Time `json:"at"`
	// Index is the last log index the survivor had; everything up to it
	// was kept, committed or not.
	Index uint64 `json:"index"`
	// Dropped lists the members removed from the configuration, as
	// id@peer-address.
	Dropped []string `json:"dropped,omitempty"`
}

// checkForceNewCluster refuses --force-new-cluster on a data dir that has
// nothing to keep: it recovers a survivor, it does not create a cluster.
func (s *Server) checkForceNewCluster(exists bool) error {
	if s.cfg.ForceNewCluster && !exists {
		return fmt.Errorf("raftstore: --force-new-cluster keeps a surviving member's data, but data dir %s holds no member: point --data-dir at the survivor's data dir (use --initial-cluster for a brand new cluster)", s.cfg.DataDir)
	}
	return nil
}

// forceNewCluster makes this member the only voter of its cluster, keeping
// its state, when a quorum is lost for good. It rewrites the Raft state
// with hashicorp/raft's RecoverCluster: the state machine is rebuilt from
// the latest snapshot and every log entry this member holds (so entries
// it had but that never committed are kept too), and saved as a snapshot
// whose configuration holds only this member. The cluster ID is kept, so
// clients and new members (--join) see the same cluster.
func (s *Server) forceNewCluster(rc *raft.Config, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore) error {
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("raftstore: --force-new-cluster: %w", err)
	}
	if !has {
		return fmt.Errorf("raftstore: --force-new-cluster: data dir %s holds no Raft state (the member never received any data): there is nothing to keep", s.cfg.DataDir)
	}
	self := raft.Server{ID: raft.ServerID(memberIDString(s.meta.MemberID)), Address: raft.ServerAddress(s.cfg.AdvertisePeer), Suffrage: raft.Voter}
	// The throwaway FSMs and config copies keep the real ones untouched:
	// both calls leave their FSM unusable and mark their config.
	probe := *rc
	old, err := raft.GetConfiguration(&probe, newFSM(s.meta.ClusterID, s.log), logs, stable, snaps, s.trans)
	if err != nil {
		return fmt.Errorf("raftstore: --force-new-cluster: reading the current membership: %w", err)
	}
	var dropped []string
	for _, srv := range old.Servers {
		if srv.ID != self.ID {
			dropped = append(dropped, fmt.Sprintf("%s@%s", srv.ID, srv.Address))
		}
	}
	if len(old.Servers) == 1 && old.Servers[0] == self {
		s.log.Warn("--force-new-cluster: this member is already the only member; nothing to do (remove the flag for later restarts)")
		return nil
	}
	last, err := logs.LastIndex()
	if err != nil {
		return fmt.Errorf("raftstore: --force-new-cluster: %w", err)
	}
	recovery := *rc
	if err := raft.RecoverCluster(&recovery, newFSM(s.meta.ClusterID, s.log), logs, stable, snaps, s.trans,
		raft.Configuration{Servers: []raft.Server{self}}); err != nil {
		return fmt.Errorf("raftstore: --force-new-cluster: %w", err)
	}
	s.meta.ForcedNewCluster = &forcedNewCluster{At: time.Now().UTC(), Index: last, Dropped: dropped}
	if err := writeMeta(s.cfg.DataDir, s.meta); err != nil {
		return err
	}
	s.log.Warn("FORCED A NEW CLUSTER: this member is now the only member of its cluster, with all the data it held; the other members were dropped and must not be restarted with their old data dirs: wipe them and add them back with --join; remove --force-new-cluster for later restarts",
		"member_id", memberIDString(s.meta.MemberID), "kept_through_index", last, "dropped", strings.Join(dropped, ","))
	return nil
}
