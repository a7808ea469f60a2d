package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// joinCluster asks a running member to add this one, and returns the new
// member's identity. A member that was added before but never started
// (e.g. this process crashed right after joining) is adopted.
func (s *Server) joinCluster() (memberMeta, error) {
	cfg := s.cfg
	endpoint := cfg.Join
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	if cfg.TLS == nil {
		endpoint = strings.Replace(endpoint, "https://", "http://", 1)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		TLS:         cfg.TLS.client(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return memberMeta{}, fmt.Errorf("raftstore: --join %s: %w", cfg.Join, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	peerURL := s.peerURL()
	add := cli.MemberAdd
	if cfg.Learner {
		add = cli.MemberAddAsLearner
	}
	resp, err := add(ctx, []string{peerURL})
	if err == nil {
		s.log.Info("joined cluster", "via", cfg.Join, "member_id", memberIDString(resp.Member.ID), "learner", cfg.Learner)
		return memberMeta{Name: cfg.Name, MemberID: resp.Member.ID, ClusterID: resp.Header.ClusterId, Origin: originJoin, CAFingerprint: cfg.CAFingerprint}, nil
	}
	if !errors.Is(err, rpctypes.ErrPeerURLExist) {
		return memberMeta{}, fmt.Errorf("raftstore: joining the cluster through %s failed: %w (is it reachable, and is --pki-dir the cluster's?)", cfg.Join, err)
	}
	list, lerr := cli.MemberList(ctx)
	if lerr != nil {
		return memberMeta{}, fmt.Errorf("raftstore: joining through %s: %w", cfg.Join, lerr)
	}
	for _, m := range list.Members {
		if len(m.PeerURLs) == 1 && m.PeerURLs[0] == peerURL {
			if m.Name != "" && m.Name != cfg.Name {
				break
			}
			s.log.Info("adopting membership added earlier for this peer address", "member_id", memberIDString(m.ID))
			return memberMeta{Name: cfg.Name, MemberID: m.ID, ClusterID: list.Header.ClusterId, Origin: originJoin, CAFingerprint: cfg.CAFingerprint}, nil
		}
	}
	return memberMeta{}, fmt.Errorf("raftstore: the cluster already has a member with peer URL %s: remove it first (cairn etcdctl member remove ID), or use another --advertise-peer", peerURL)
}
