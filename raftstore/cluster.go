package raftstore

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

// clusterServer maps the etcd Cluster API onto Raft configuration changes.
// Raft's configuration is the truth for who is a member (and who is a
// learner, a Raft non-voter); names and client URLs come from the
// replicated attribute table that each member publishes.
type clusterServer struct {
	pb.UnimplementedClusterServer
	s *Server
}

func (c *clusterServer) MemberList(ctx context.Context, req *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	if req.Linearizable {
		if err := c.s.linearizableRead(ctx); err != nil {
			return nil, toGRPC(err)
		}
	}
	members, err := c.s.members()
	if err != nil {
		return nil, toGRPC(err)
	}
	resp := &pb.MemberListResponse{Members: members}
	c.s.fillHeader(&resp.Header)
	return resp, nil
}

// members lists the current Raft configuration with published attributes.
func (s *Server) members() ([]*pb.Member, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	secure := s.cfg.TLS != nil
	var out []*pb.Member
	for _, srv := range f.Configuration().Servers {
		id := parseMemberID(srv.ID)
		m := &pb.Member{ID: id, PeerURLs: []string{peerURLFor(string(srv.Address), secure)}, IsLearner: srv.Suffrage == raft.Nonvoter}
		if a, ok := s.fsm.memberAttrs(id); ok {
			m.Name = a.Name
			m.ClientURLs = a.ClientURLs
		}
		out = append(out, m)
	}
	return out, nil
}

// onLeader runs local when this replica leads, and otherwise makes the same
// call on the leader over the peer port (which serves the Cluster and
// Maintenance services too), waiting through an election if need be.
func onLeader[Req, Resp any, Client any](s *Server, ctx context.Context, req Req,
	remote func(Client, context.Context, Req, ...grpc.CallOption) (Resp, error),
	local func(context.Context, Req) (Resp, error)) (Resp, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	conn, err := s.leaderPeerConn(ctx)
	if err != nil {
		var zero Resp
		return zero, toGRPC(err)
	}
	if conn == nil {
		return local(ctx, req)
	}
	return remote(newClient[Client](conn), ctx, req)
}

// newClient builds the generated gRPC client of type C on conn.
func newClient[C any](conn *grpc.ClientConn) C {
	var c any
	switch any((*C)(nil)).(type) {
	case *pb.ClusterClient:
		c = pb.NewClusterClient(conn)
	case *pb.MaintenanceClient:
		c = pb.NewMaintenanceClient(conn)
	}
	return c.(C)
}

// leaderPeerConn returns a connection to the leader's peer port, or nil
// when this replica leads.
func (s *Server) leaderPeerConn(ctx context.Context) (*grpc.ClientConn, error) {
	for {
		if s.raft.State() == raft.Leader {
			return nil, nil
		}
		changed := s.leaderSig.wait()
		if addr, _ := s.leader(); addr != "" {
			return s.peers.get(string(addr))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ErrNoLeader
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func peerAddrFromURLs(urls []string) (string, error) {
	if len(urls) != 1 {
		return "", rpctypes.ErrGRPCMemberBadURLs
	}
	raw := urls[0]
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Port() == "" {
		return "", rpctypes.ErrGRPCMemberBadURLs
	}
	return u.Host, nil
}

func (c *clusterServer) MemberAdd(ctx context.Context, req *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	return onLeader(c.s, ctx, req, pb.ClusterClient.MemberAdd, c.localAdd)
}

// localAdd runs on the leader.
func (c *clusterServer) localAdd(ctx context.Context, req *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	s := c.s
	addr, err := peerAddrFromURLs(req.PeerURLs)
	if err != nil {
		return nil, err
	}
	members, err := s.members()
	if err != nil {
		return nil, toGRPC(err)
	}
	for _, m := range members {
		if a, _ := peerAddrFromURLs(m.PeerURLs); a == addr {
			return nil, rpctypes.ErrGRPCPeerURLExist
		}
	}
	id := hash64(fmt.Sprintf("%s|%016x|%d", addr, s.meta.ClusterID, time.Now().UnixNano()))
	var f raft.IndexFuture
	if req.IsLearner {
		f = s.raft.AddNonvoter(raft.ServerID(memberIDString(id)), raft.ServerAddress(addr), 0, s.cfg.RequestTimeout)
	} else {
		f = s.raft.AddVoter(raft.ServerID(memberIDString(id)), raft.ServerAddress(addr), 0, s.cfg.RequestTimeout)
	}
	if err := f.Error(); err != nil {
		return nil, toGRPC(err)
	}
	s.log.Info("member added", "member_id", memberIDString(id), "peer", addr, "learner", req.IsLearner)
	members, _ = s.members()
	resp := &pb.MemberAddResponse{Member: &pb.Member{ID: id, PeerURLs: []string{peerURLFor(addr, s.cfg.TLS != nil)}, IsLearner: req.IsLearner}, Members: members}
	s.fillHeader(&resp.Header)
	return resp, nil
}

func (c *clusterServer) MemberRemove(ctx context.Context, req *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	return onLeader(c.s, ctx, req, pb.ClusterClient.MemberRemove, c.localRemove)
}

// localRemove runs on the leader.
func (c *clusterServer) localRemove(ctx context.Context, req *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	s := c.s
	if _, err := s.findMember(req.ID); err != nil {
		return nil, err
	}
	if err := s.raft.RemoveServer(raft.ServerID(memberIDString(req.ID)), 0, s.cfg.RequestTimeout).Error(); err != nil {
		return nil, toGRPC(err)
	}
	s.log.Info("member removed", "member_id", memberIDString(req.ID))
	// The attribute table entry is cleanup; the removal itself already holds.
	if s.raft.State() == raft.Leader {
		if _, err := s.propose(ctx, cmdMemberForget, &pb.MemberRemoveRequest{ID: req.ID}); err != nil {
			s.log.Warn("forgetting removed member's attributes failed", "err", err)
		}
	}
	members, _ := s.members()
	resp := &pb.MemberRemoveResponse{Members: members}
	s.fillHeader(&resp.Header)
	return resp, nil
}

func (s *Server) findMember(id uint64) (*pb.Member, error) {
	members, err := s.members()
	if err != nil {
		return nil, toGRPC(err)
	}
	for _, m := range members {
		if m.ID == id {
			return m, nil
		}
	}
	return nil, rpctypes.ErrGRPCMemberNotFound
}

func (c *clusterServer) MemberUpdate(ctx context.Context, req *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	return onLeader(c.s, ctx, req, pb.ClusterClient.MemberUpdate, c.localUpdate)
}

// localUpdate runs on the leader.
func (c *clusterServer) localUpdate(ctx context.Context, req *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	s := c.s
	m, err := s.findMember(req.ID)
	if err != nil {
		return nil, err
	}
	addr, err := peerAddrFromURLs(req.PeerURLs)
	if err != nil {
		return nil, err
	}
	id := raft.ServerID(memberIDString(req.ID))
	var f raft.IndexFuture
	if m.IsLearner {
		f = s.raft.AddNonvoter(id, raft.ServerAddress(addr), 0, s.cfg.RequestTimeout)
	} else {
		f = s.raft.AddVoter(id, raft.ServerAddress(addr), 0, s.cfg.RequestTimeout)
	}
	if err := f.Error(); err != nil {
		return nil, toGRPC(err)
	}
	members, _ := s.members()
	resp := &pb.MemberUpdateResponse{Members: members}
	s.fillHeader(&resp.Header)
	return resp, nil
}

func (c *clusterServer) MemberPromote(ctx context.Context, req *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	return onLeader(c.s, ctx, req, pb.ClusterClient.MemberPromote, c.localPromote)
}

// localPromote runs on the leader.
func (c *clusterServer) localPromote(ctx context.Context, req *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	s := c.s
	m, err := s.findMember(req.ID)
	if err != nil {
		return nil, err
	}
	if !m.IsLearner {
		return nil, rpctypes.ErrGRPCMemberNotLearner
	}
	addr, _ := peerAddrFromURLs(m.PeerURLs)
	if err := s.learnerReady(ctx, addr); err != nil {
		return nil, err
	}
	if err := s.raft.AddVoter(raft.ServerID(memberIDString(req.ID)), raft.ServerAddress(addr), 0, s.cfg.RequestTimeout).Error(); err != nil {
		return nil, toGRPC(err)
	}
	s.log.Info("learner promoted to voter", "member_id", memberIDString(req.ID))
	members, _ := s.members()
	resp := &pb.MemberPromoteResponse{Members: members}
	s.fillHeader(&resp.Header)
	return resp, nil
}

// learnerReady refuses to promote a learner that lags far behind, as etcd
// does: a voter that cannot vote usefully would only weaken the quorum.
func (s *Server) learnerReady(ctx context.Context, peerAddr string) error {
	conn, err := s.peers.get(peerAddr)
	if err != nil {
		return rpctypes.ErrGRPCLearnerNotReady
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := pb.NewMaintenanceClient(conn).Status(sctx, &pb.StatusRequest{})
	if err != nil {
		return rpctypes.ErrGRPCLearnerNotReady
	}
	if float64(st.RaftAppliedIndex) < 0.9*float64(s.raft.CommitIndex()) {
		return rpctypes.ErrGRPCLearnerNotReady
	}
	return nil
}
