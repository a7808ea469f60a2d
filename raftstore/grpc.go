package raftstore

import (
	"context"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
)

// newStoreGRPC builds the client-facing gRPC server with the etcd services.
// TLS is terminated by the listener, which logs refused clients.
func (s *Server) newStoreGRPC() *grpc.Server {
	g := grpc.NewServer(
		grpc.MaxRecvMsgSize(s.cfg.MaxRequestBytes+grpcOverheadBytes),
		grpc.MaxSendMsgSize(1<<31-1),
		grpc.MaxConcurrentStreams(1<<20),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}),
		grpc.StreamInterceptor(s.requireLeaderStreams),
	)
	pb.RegisterKVServer(g, &kvServer{s: s})
	pb.RegisterWatchServer(g, &watchServer{s: s})
	pb.RegisterLeaseServer(g, &leaseServer{s: s})
	pb.RegisterClusterServer(g, &clusterServer{s: s})
	pb.RegisterMaintenanceServer(g, &maintenanceServer{s: s})
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	return g
}

// requireLeaderStreams honours etcd's require-leader option (clientv3's
// WithRequireLeader, which Kubernetes uses for watches): such a stream is
// refused, or ended, with ErrGRPCNoLeader once this replica has been
// without a leader for longer than an election takes, so the client moves
// to a healthy replica instead of waiting on a silent one.
func (s *Server) requireLeaderStreams(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	if v := md.Get(rpctypes.MetadataRequireLeaderKey); len(v) == 0 || v[0] != rpctypes.MetadataHasLeader {
		return handler(srv, ss)
	}
	if addr, _ := s.leader(); addr == "" {
		return rpctypes.ErrGRPCNoLeader
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	var lost atomic.Bool
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var since time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if addr, _ := s.leader(); addr != "" {
				since = time.Time{}
				continue
			}
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) > 3*s.cfg.ElectionTimeout {
				lost.Store(true)
				cancel()
				return
			}
		}
	}()
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	if lost.Load() {
		return rpctypes.ErrGRPCNoLeader
	}
	return err
}

// ctxStream replaces a server stream's context.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *ctxStream) Context() context.Context { return c.ctx }
