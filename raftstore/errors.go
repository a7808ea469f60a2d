package raftstore

import (
	"context"
	"errors"

	"cairn/raftstore/mvcc"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors the store returns besides the mvcc ones. Apply results are
// deterministic, so they travel between replicas by their text.
var (
	ErrNoSpace       = errors.New("raftstore: database space exceeded")
	ErrNoLeader      = errors.New("raftstore: no leader")
	ErrStopped       = errors.New("raftstore: server stopped")
	ErrTooLarge      = errors.New("raftstore: request is too large")
	ErrMemberUnknown = errors.New("raftstore: member not found")
	ErrLeaseTTL      = errors.New("raftstore: too large lease TTL")
	ErrUnknownAlarm  = errors.New("raftstore: unknown alarm")
)

// knownErrors lets a follower turn a forwarded apply error back into the
// same error value the leader produced.
var knownErrors = func() map[string]error {
	m := map[string]error{}
	for _, e := range []error{
		mvcc.ErrCompacted, mvcc.ErrFutureRev, mvcc.ErrKeyNotFound, mvcc.ErrLeaseNotFound,
		mvcc.ErrLeaseExists, mvcc.ErrDuplicateKey, mvcc.ErrEmptyKey,
		ErrNoSpace, ErrNoLeader, ErrStopped, ErrTooLarge, ErrMemberUnknown, ErrLeaseTTL, ErrUnknownAlarm,
		errLeaderChanged, context.DeadlineExceeded, context.Canceled,
	} {
		m[e.Error()] = e
	}
	return m
}()

func errorFromText(s string) error {
	if e, ok := knownErrors[s]; ok {
		return e
	}
	return errors.New(s)
}

// toGRPC maps store errors onto the status errors etcd clients know.
func toGRPC(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, mvcc.ErrCompacted):
		return rpctypes.ErrGRPCCompacted
	case errors.Is(err, mvcc.ErrFutureRev):
		return rpctypes.ErrGRPCFutureRev
	case errors.Is(err, mvcc.ErrKeyNotFound):
		return rpctypes.ErrGRPCKeyNotFound
	case errors.Is(err, mvcc.ErrLeaseNotFound):
		return rpctypes.ErrGRPCLeaseNotFound
	case errors.Is(err, mvcc.ErrLeaseExists):
		return rpctypes.ErrGRPCLeaseExist
	case errors.Is(err, mvcc.ErrDuplicateKey):
		return rpctypes.ErrGRPCDuplicateKey
	case errors.Is(err, mvcc.ErrEmptyKey):
		return rpctypes.ErrGRPCEmptyKey
	case errors.Is(err, ErrNoSpace):
		return rpctypes.ErrGRPCNoSpace
	case errors.Is(err, ErrNoLeader):
		return rpctypes.ErrGRPCNoLeader
	case errors.Is(err, ErrStopped):
		return rpctypes.ErrGRPCStopped
	case errors.Is(err, ErrTooLarge):
		return rpctypes.ErrGRPCRequestTooLarge
	case errors.Is(err, ErrMemberUnknown):
		return rpctypes.ErrGRPCMemberNotFound
	case errors.Is(err, ErrLeaseTTL):
		return rpctypes.ErrGRPCLeaseTTLTooLarge
	case errors.Is(err, context.Canceled):
		return rpctypes.ErrGRPCCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return rpctypes.ErrGRPCTimeout
	}
	return status.Error(codes.Unknown, err.Error())
}
