package raftstore

import (
	"context"
	"errors"
	"io"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// LocalClients are etcd API clients that call this replica's services in
// process: no network hop and no serialization. The API server uses them
// when it runs beside a store replica; wrap them with clientv3's
// NewKVFromKVClient, NewWatchFromWatchClient and NewLeaseFromLeaseClient.
type LocalClients struct {
	KV          pb.KVClient
	Watch       pb.WatchClient
	Lease       pb.LeaseClient
	Maintenance pb.MaintenanceClient
}

// Local returns in-process clients for this replica.
func (s *Server) Local() LocalClients {
	return LocalClients{
		KV:          localKV{&kvServer{s: s}},
		Watch:       localWatch{&watchServer{s: s}},
		Lease:       localLease{&leaseServer{s: s}},
		Maintenance: localMaintenance{&maintenanceServer{s: s}},
	}
}

type localKV struct{ s *kvServer }

func (l localKV) Range(ctx context.Context, in *pb.RangeRequest, _ ...grpc.CallOption) (*pb.RangeResponse, error) {
	return l.s.Range(ctx, in)
}

func (l localKV) RangeStream(ctx context.Context, in *pb.RangeRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[pb.RangeStreamResponse], error) {
	return nil, l.s.RangeStream(in, nil)
}

func (l localKV) Put(ctx context.Context, in *pb.PutRequest, _ ...grpc.CallOption) (*pb.PutResponse, error) {
	return l.s.Put(ctx, in)
}

func (l localKV) DeleteRange(ctx context.Context, in *pb.DeleteRangeRequest, _ ...grpc.CallOption) (*pb.DeleteRangeResponse, error) {
	return l.s.DeleteRange(ctx, in)
}

func (l localKV) Txn(ctx context.Context, in *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	return l.s.Txn(ctx, in)
}

func (l localKV) Compact(ctx context.Context, in *pb.CompactionRequest, _ ...grpc.CallOption) (*pb.CompactionResponse, error) {
	return l.s.Compact(ctx, in)
}

type localWatch struct{ s *watchServer }

func (l localWatch) Watch(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[pb.WatchRequest, pb.WatchResponse], error) {
	return startPipe(ctx, l.s.Watch), nil
}

type localLease struct{ s *leaseServer }

func (l localLease) LeaseGrant(ctx context.Context, in *pb.LeaseGrantRequest, _ ...grpc.CallOption) (*pb.LeaseGrantResponse, error) {
	return l.s.LeaseGrant(ctx, in)
}

func (l localLease) LeaseRevoke(ctx context.Context, in *pb.LeaseRevokeRequest, _ ...grpc.CallOption) (*pb.LeaseRevokeResponse, error) {
	return l.s.LeaseRevoke(ctx, in)
}

func (l localLease) LeaseKeepAlive(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse], error) {
	return startPipe(ctx, l.s.LeaseKeepAlive), nil
}

func (l localLease) LeaseTimeToLive(ctx context.Context, in *pb.LeaseTimeToLiveRequest, _ ...grpc.CallOption) (*pb.LeaseTimeToLiveResponse, error) {
	return l.s.LeaseTimeToLive(ctx, in)
}

func (l localLease) LeaseLeases(ctx context.Context, in *pb.LeaseLeasesRequest, _ ...grpc.CallOption) (*pb.LeaseLeasesResponse, error) {
	return l.s.LeaseLeases(ctx, in)
}

type localMaintenance struct{ s *maintenanceServer }

func (l localMaintenance) Alarm(ctx context.Context, in *pb.AlarmRequest, _ ...grpc.CallOption) (*pb.AlarmResponse, error) {
	return l.s.Alarm(ctx, in)
}

func (l localMaintenance) Status(ctx context.Context, in *pb.StatusRequest, _ ...grpc.CallOption) (*pb.StatusResponse, error) {
	return l.s.Status(ctx, in)
}

func (l localMaintenance) Defragment(ctx context.Context, in *pb.DefragmentRequest, _ ...grpc.CallOption) (*pb.DefragmentResponse, error) {
	return l.s.Defragment(ctx, in)
}

func (l localMaintenance) Hash(ctx context.Context, in *pb.HashRequest, _ ...grpc.CallOption) (*pb.HashResponse, error) {
	return l.s.Hash(ctx, in)
}

func (l localMaintenance) HashKV(ctx context.Context, in *pb.HashKVRequest, _ ...grpc.CallOption) (*pb.HashKVResponse, error) {
	return l.s.HashKV(ctx, in)
}

func (l localMaintenance) Snapshot(ctx context.Context, in *pb.SnapshotRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[pb.SnapshotResponse], error) {
	p := newPipe[pb.SnapshotRequest, pb.SnapshotResponse](ctx)
	go func() { p.finish(l.s.Snapshot(in, &pipeServer[pb.SnapshotRequest, pb.SnapshotResponse]{p})) }()
	return &pipeClient[pb.SnapshotRequest, pb.SnapshotResponse]{p}, nil
}

func (l localMaintenance) MoveLeader(ctx context.Context, in *pb.MoveLeaderRequest, _ ...grpc.CallOption) (*pb.MoveLeaderResponse, error) {
	return l.s.MoveLeader(ctx, in)
}

func (l localMaintenance) Downgrade(ctx context.Context, in *pb.DowngradeRequest, _ ...grpc.CallOption) (*pb.DowngradeResponse, error) {
	return l.s.Downgrade(ctx, in)
}

// pipe connects an in-process stream client to a server handler with two
// channels, standing in for a gRPC stream.
type pipe[Req, Resp any] struct {
	ctx    context.Context
	cancel context.CancelFunc
	reqs   chan *Req
	resps  chan *Resp
	done   chan struct{}

	once sync.Once
	err  error // the handler's result, set before done closes
}

func newPipe[Req, Resp any](ctx context.Context) *pipe[Req, Resp] {
	ctx, cancel := context.WithCancel(ctx)
	return &pipe[Req, Resp]{ctx: ctx, cancel: cancel, reqs: make(chan *Req, 16), resps: make(chan *Resp, 64), done: make(chan struct{})}
}

// startPipe runs a bidirectional stream handler in process.
func startPipe[Req, Resp any](ctx context.Context, handler func(grpc.BidiStreamingServer[Req, Resp]) error) *pipeClient[Req, Resp] {
	p := newPipe[Req, Resp](ctx)
	go func() { p.finish(handler(&pipeServer[Req, Resp]{p})) }()
	return &pipeClient[Req, Resp]{p}
}

func (p *pipe[Req, Resp]) finish(err error) {
	p.once.Do(func() {
		if err == nil {
			err = io.EOF
		}
		p.err = err
		close(p.done)
		p.cancel()
	})
}

// pipeClient is the client end of a pipe.
type pipeClient[Req, Resp any] struct{ p *pipe[Req, Resp] }

func (c *pipeClient[Req, Resp]) Send(m *Req) error {
	select {
	case c.p.reqs <- m:
		return nil
	case <-c.p.done:
		return io.EOF
	case <-c.p.ctx.Done():
		return c.p.ctx.Err()
	}
}

func (c *pipeClient[Req, Resp]) Recv() (*Resp, error) {
	select {
	case m := <-c.p.resps:
		return m, nil
	case <-c.p.done:
		// Deliver what the handler sent before it returned.
		select {
		case m := <-c.p.resps:
			return m, nil
		default:
		}
		return nil, c.p.err
	}
}

func (c *pipeClient[Req, Resp]) CloseSend() error             { c.p.cancel(); return nil }
func (c *pipeClient[Req, Resp]) Header() (metadata.MD, error) { return metadata.MD{}, nil }
func (c *pipeClient[Req, Resp]) Trailer() metadata.MD         { return metadata.MD{} }
func (c *pipeClient[Req, Resp]) Context() context.Context     { return c.p.ctx }
func (c *pipeClient[Req, Resp]) SendMsg(m any) error          { return c.Send(m.(*Req)) }

// RecvMsg is not used by the etcd clients, which call Recv.
func (c *pipeClient[Req, Resp]) RecvMsg(any) error { return errPipeRecvMsg }

// pipeServer is the handler end of a pipe.
type pipeServer[Req, Resp any] struct{ p *pipe[Req, Resp] }

func (s *pipeServer[Req, Resp]) Send(m *Resp) error {
	select {
	case s.p.resps <- m:
		return nil
	case <-s.p.ctx.Done():
		return s.p.ctx.Err()
	}
}

func (s *pipeServer[Req, Resp]) Recv() (*Req, error) {
	select {
	case m := <-s.p.reqs:
		return m, nil
	case <-s.p.ctx.Done():
		return nil, io.EOF
	}
}

func (s *pipeServer[Req, Resp]) SetHeader(metadata.MD) error  { return nil }
func (s *pipeServer[Req, Resp]) SendHeader(metadata.MD) error { return nil }
func (s *pipeServer[Req, Resp]) SetTrailer(metadata.MD)       {}
func (s *pipeServer[Req, Resp]) Context() context.Context     { return s.p.ctx }
func (s *pipeServer[Req, Resp]) SendMsg(m any) error          { return s.Send(m.(*Resp)) }

// RecvMsg is not used by the store's handlers, which call Recv.
func (s *pipeServer[Req, Resp]) RecvMsg(any) error { return errPipeRecvMsg }

var errPipeRecvMsg = errors.New("raftstore: in-process streams support Recv, not RecvMsg")
