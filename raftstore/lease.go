package raftstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"

	"cairn/raftstore/mvcc"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// leaseServer serves the etcd Lease API. Grants and revocations go through
// Raft; keep-alives and remaining TTLs are answered by the leader, which
// alone tracks deadlines.
type leaseServer struct {
	pb.UnimplementedLeaseServer
	s *Server
}

func (l *leaseServer) LeaseGrant(ctx context.Context, req *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if req.TTL > MaxLeaseTTL {
		return nil, rpctypes.ErrGRPCLeaseTTLTooLarge
	}
	grant := &pb.LeaseGrantRequest{ID: req.ID, TTL: req.TTL}
	if min := l.s.lessor.minTTL(); grant.TTL < min {
		grant.TTL = min
	}
	if grant.ID == 0 {
		grant.ID = newLeaseID()
	}
	resp, err := l.s.write(ctx, cmdLeaseGrant, grant)
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.LeaseGrantResponse)
	l.s.fillHeader(&out.Header)
	return out, nil
}

// newLeaseID picks a random positive ID; the FSM refuses duplicates.
func newLeaseID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := int64(binary.BigEndian.Uint64(b[:]) >> 1)
	if id == 0 {
		id = 1
	}
	return id
}

func (l *leaseServer) LeaseRevoke(ctx context.Context, req *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	resp, err := l.s.write(ctx, cmdLeaseRevoke, req)
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.LeaseRevokeResponse)
	l.s.fillHeader(&out.Header)
	return out, nil
}

func (l *leaseServer) LeaseKeepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ttl, err := l.s.leaseRenew(stream.Context(), req.ID)
		resp := &pb.LeaseKeepAliveResponse{ID: req.ID, TTL: ttl}
		if errors.Is(err, mvcc.ErrLeaseNotFound) {
			resp.TTL = 0
		} else if err != nil {
			return toGRPC(err)
		}
		l.s.fillHeader(&resp.Header)
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// leaseRenew restarts a lease's TTL on the leader, from any replica.
func (s *Server) leaseRenew(ctx context.Context, id int64) (int64, error) {
	return s.onLeader(ctx, func() (int64, error) { return s.lessor.renew(id) }, peerMethodLeaseRenew, id)
}

func (s *Server) leaseRemaining(ctx context.Context, id int64) (int64, error) {
	return s.onLeader(ctx, func() (int64, error) { return s.lessor.remaining(id), nil }, peerMethodLeaseTTL, id)
}

// onLeader runs local on the ready leader, or calls method on the leader's
// peer port, waiting through elections until the request timeout.
func (s *Server) onLeader(ctx context.Context, local func() (int64, error), method string, arg int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	for {
		changed := s.leaderSig.wait()
		if s.ready.Load() {
			v, err := local()
			if !errors.Is(err, errNotReady) {
				return v, err
			}
		} else if addr, _ := s.leader(); addr != "" && s.raft.State() != raft.Leader {
			if conn, err := s.peers.get(string(addr)); err == nil {
				out := new(wrapperspb.Int64Value)
				err := conn.Invoke(ctx, method, wrapperspb.Int64(arg), out)
				if err == nil {
					return out.Value, nil
				}
				if errors.Is(toGRPC(err), rpctypes.ErrGRPCLeaseNotFound) || err.Error() == rpctypes.ErrGRPCLeaseNotFound.Error() {
					return 0, mvcc.ErrLeaseNotFound
				}
				if !notSent(err) && ctx.Err() == nil {
					s.log.Debug("lease call to leader failed; retrying", "err", err)
				}
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, s.timeoutError(ctx.Err())
		case <-timeAfter20ms():
		}
	}
}

func (l *leaseServer) LeaseTimeToLive(ctx context.Context, req *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	if err := l.s.linearizableRead(ctx); err != nil {
		return nil, toGRPC(err)
	}
	le, ok := l.s.fsm.store.Lease(req.ID)
	if !ok {
		resp := &pb.LeaseTimeToLiveResponse{ID: req.ID, TTL: -1}
		l.s.fillHeader(&resp.Header)
		return resp, nil
	}
	ttl, err := l.s.leaseRemaining(ctx, req.ID)
	if err != nil {
		return nil, toGRPC(err)
	}
	resp := &pb.LeaseTimeToLiveResponse{ID: req.ID, TTL: ttl, GrantedTTL: le.TTL}
	if req.Keys {
		resp.Keys = le.Keys
	}
	l.s.fillHeader(&resp.Header)
	return resp, nil
}

func (l *leaseServer) LeaseLeases(ctx context.Context, _ *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	if err := l.s.linearizableRead(ctx); err != nil {
		return nil, toGRPC(err)
	}
	resp := &pb.LeaseLeasesResponse{}
	for _, le := range l.s.fsm.store.Leases() {
		resp.Leases = append(resp.Leases, &pb.LeaseStatus{ID: le.ID})
	}
	l.s.fillHeader(&resp.Header)
	return resp, nil
}
