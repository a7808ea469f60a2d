package raftstore

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// kvServer serves the etcd KV API.
type kvServer struct {
	pb.UnimplementedKVServer
	s *Server
}

// fillHeader completes a response header from the store with what only the
// server knows.
func (s *Server) fillHeader(h **pb.ResponseHeader) {
	if *h == nil {
		*h = &pb.ResponseHeader{Revision: s.fsm.store.Rev()}
	}
	(*h).ClusterId = s.meta.ClusterID
	(*h).MemberId = s.meta.MemberID
	(*h).RaftTerm = s.raft.CurrentTerm()
}

func (k *kvServer) Range(ctx context.Context, req *pb.RangeRequest) (*pb.RangeResponse, error) {
	if len(req.Key) == 0 {
		return nil, rpctypes.ErrGRPCEmptyKey
	}
	if _, ok := pb.RangeRequest_SortOrder_name[int32(req.SortOrder)]; !ok {
		return nil, rpctypes.ErrGRPCInvalidSortOption
	}
	if _, ok := pb.RangeRequest_SortTarget_name[int32(req.SortTarget)]; !ok {
		return nil, rpctypes.ErrGRPCInvalidSortOption
	}
	if !req.Serializable {
		if err := k.s.linearizableRead(ctx); err != nil {
			return nil, toGRPC(err)
		}
	}
	resp, err := k.s.fsm.store.Range(req)
	if err != nil {
		return nil, toGRPC(err)
	}
	k.s.fillHeader(&resp.Header)
	return resp, nil
}

func (k *kvServer) Put(ctx context.Context, req *pb.PutRequest) (*pb.PutResponse, error) {
	if len(req.Key) == 0 {
		return nil, rpctypes.ErrGRPCEmptyKey
	}
	if req.IgnoreValue && len(req.Value) != 0 {
		return nil, rpctypes.ErrGRPCValueProvided
	}
	if req.IgnoreLease && req.Lease != 0 {
		return nil, rpctypes.ErrGRPCLeaseProvided
	}
	resp, err := k.s.write(ctx, cmdPut, req)
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.PutResponse)
	k.s.fillHeader(&out.Header)
	return out, nil
}

func (k *kvServer) DeleteRange(ctx context.Context, req *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if len(req.Key) == 0 {
		return nil, rpctypes.ErrGRPCEmptyKey
	}
	resp, err := k.s.write(ctx, cmdDeleteRange, req)
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.DeleteRangeResponse)
	k.s.fillHeader(&out.Header)
	return out, nil
}

// maxTxnOps is etcd's default --max-txn-ops.
const maxTxnOps = 128

func (k *kvServer) Txn(ctx context.Context, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	if len(req.Success) > maxTxnOps || len(req.Failure) > maxTxnOps || len(req.Compare) > maxTxnOps {
		return nil, rpctypes.ErrGRPCTooManyOps
	}
	if err := checkTxnKeys(req); err != nil {
		return nil, err
	}
	resp, err := k.s.write(ctx, cmdTxn, req)
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.TxnResponse)
	k.s.fillHeader(&out.Header)
	return out, nil
}

func checkTxnKeys(req *pb.TxnRequest) error {
	for _, c := range req.Compare {
		if len(c.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
	}
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			switch r := op.Request.(type) {
			case *pb.RequestOp_RequestRange:
				if len(r.RequestRange.GetKey()) == 0 {
					return rpctypes.ErrGRPCEmptyKey
				}
			case *pb.RequestOp_RequestPut:
				if len(r.RequestPut.GetKey()) == 0 {
					return rpctypes.ErrGRPCEmptyKey
				}
			case *pb.RequestOp_RequestDeleteRange:
				if len(r.RequestDeleteRange.GetKey()) == 0 {
					return rpctypes.ErrGRPCEmptyKey
				}
			case *pb.RequestOp_RequestTxn:
				if err := checkTxnKeys(r.RequestTxn); err != nil {
					return err
				}
			case nil:
				return rpctypes.ErrGRPCKeyNotFound
			}
		}
	}
	return nil
}

func (k *kvServer) Compact(ctx context.Context, req *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	resp, err := k.s.write(ctx, cmdCompact, req)
	if err != nil {
		return nil, err
	}
	out := resp.(*pb.CompactionResponse)
	k.s.fillHeader(&out.Header)
	return out, nil
}

// write checks a client write against the request size limit and the
// space quota, replicates it and maps errors for gRPC.
func (s *Server) write(ctx context.Context, t commandType, req proto.Message) (proto.Message, error) {
	if proto.Size(req) > s.cfg.MaxRequestBytes {
		return nil, rpctypes.ErrGRPCRequestTooLarge
	}
	if (t == cmdPut || t == cmdLeaseGrant || (t == cmdTxn && txnHasPut(req.(*pb.TxnRequest)))) && s.fsm.noSpace() {
		return nil, rpctypes.ErrGRPCNoSpace
	}
	resp, err := s.propose(ctx, t, req)
	if err != nil {
		return nil, clientError(ctx, err)
	}
	return resp, nil
}

// clientError maps an error for a client whose request may have taken
// effect. etcd clients resend a request that failed with Canceled or
// DeadlineExceeded while their own context is still live, which for a
// write that did take effect would apply it twice; so a cancellation or
// timeout inside the cluster (a forward cut short by a leader change, say)
// is reported as etcd's Unavailable "request timed out" instead.
func clientError(ctx context.Context, err error) error {
	err = toGRPC(err)
	if ctx.Err() != nil {
		return err
	}
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded:
		return rpctypes.ErrGRPCTimeout
	}
	return err
}
