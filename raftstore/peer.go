package raftstore

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The internal peer service runs on the peer port, behind mutual TLS with
// peer certificates. Followers use it to obtain read indexes and lease
// state from the leader; writes travel on their own channel (forward.go).
// Membership and maintenance calls that only the leader can perform are
// forwarded through the etcd Cluster and Maintenance services, which the
// peer port serves too.
const (
	peerServiceName      = "cairn.raftstore.Peer"
	peerMethodReadIndex  = "/" + peerServiceName + "/ReadIndex"
	peerMethodLeaseRenew = "/" + peerServiceName + "/LeaseRenew"
	peerMethodLeaseTTL   = "/" + peerServiceName + "/LeaseTTL"
	peerMethodTerm       = "/" + peerServiceName + "/Term"
)

// peerService is implemented by Server; the interface lets grpc check
// handler types.
type peerService interface {
	peerReadIndex(ctx context.Context, in *wrapperspb.UInt64Value) (*wrapperspb.UInt64Value, error)
	peerLeaseRenew(ctx context.Context, in *wrapperspb.Int64Value) (*wrapperspb.Int64Value, error)
	peerLeaseTTL(ctx context.Context, in *wrapperspb.Int64Value) (*wrapperspb.Int64Value, error)
	peerTerm(ctx context.Context, in *wrapperspb.UInt64Value) (*wrapperspb.UInt64Value, error)
}

func unaryHandler[In any, Out any](call func(peerService, context.Context, *In) (*Out, error)) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(In)
		if err := dec(in); err != nil {
			return nil, err
		}
		return call(srv.(peerService), ctx, in)
	}
}

var peerServiceDesc = grpc.ServiceDesc{
	ServiceName: peerServiceName,
	HandlerType: (*peerService)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "ReadIndex", Handler: unaryHandler(peerService.peerReadIndex)},
		{MethodName: "LeaseRenew", Handler: unaryHandler(peerService.peerLeaseRenew)},
		{MethodName: "LeaseTTL", Handler: unaryHandler(peerService.peerLeaseTTL)},
		{MethodName: "Term", Handler: unaryHandler(peerService.peerTerm)},
	},
}

func (s *Server) registerPeerServices(g *grpc.Server) {
	g.RegisterService(&peerServiceDesc, s)
	pb.RegisterClusterServer(g, &clusterServer{s: s})
	pb.RegisterMaintenanceServer(g, &maintenanceServer{s: s})
}

func (s *Server) peerReadIndex(ctx context.Context, _ *wrapperspb.UInt64Value) (*wrapperspb.UInt64Value, error) {
	if s.raft.State() != raft.Leader {
		return nil, status.Error(codes.FailedPrecondition, errNotLeaderMsg)
	}
	index, err := s.reads.get(ctx)
	if err != nil {
		return nil, err
	}
	return wrapperspb.UInt64(index), nil
}

// peerTerm answers a leader confirming its term for a read index
// (confirmTerm) with this replica's current term.
func (s *Server) peerTerm(_ context.Context, _ *wrapperspb.UInt64Value) (*wrapperspb.UInt64Value, error) {
	return wrapperspb.UInt64(s.raft.CurrentTerm()), nil
}

func (s *Server) peerLeaseRenew(ctx context.Context, in *wrapperspb.Int64Value) (*wrapperspb.Int64Value, error) {
	if !s.ready.Load() {
		return nil, status.Error(codes.FailedPrecondition, errNotLeaderMsg)
	}
	ttl, err := s.lessor.renew(in.Value)
	if err != nil {
		return nil, toGRPC(err)
	}
	return wrapperspb.Int64(ttl), nil
}

func (s *Server) peerLeaseTTL(ctx context.Context, in *wrapperspb.Int64Value) (*wrapperspb.Int64Value, error) {
	if !s.ready.Load() {
		return nil, status.Error(codes.FailedPrecondition, errNotLeaderMsg)
	}
	return wrapperspb.Int64(s.lessor.remaining(in.Value)), nil
}

// peerConns caches one gRPC connection per peer address.
type peerConns struct {
	opts []grpc.DialOption

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func newPeerConns(opts []grpc.DialOption) *peerConns {
	return &peerConns{opts: opts, conns: map[string]*grpc.ClientConn{}}
}

func (p *peerConns) get(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	opts := p.opts
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	c, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, err
	}
	p.conns[addr] = c
	return c, nil
}

// Close closes every cached connection.
func (p *peerConns) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, c := range p.conns {
		c.Close()
		delete(p.conns, addr)
	}
	return nil
}
