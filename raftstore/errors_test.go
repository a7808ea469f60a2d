package raftstore

import (
	"context"
	"errors"
	"testing"

	"cairn/raftstore/mvcc"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// etcd clients resend a write that failed with Canceled or DeadlineExceeded
// while their own context is live; a write that did take effect would then
// be applied twice. The linearizability test found exactly that.
func TestClientErrorNeverInvitesAResendOfAWrite(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{"internal cancel", live, status.Error(codes.Canceled, "context canceled"), codes.Unavailable},
		{"internal context error", live, context.Canceled, codes.Unavailable},
		{"internal deadline", live, context.DeadlineExceeded, codes.Unavailable},
		{"client canceled", done, context.Canceled, codes.Canceled},
		{"store error kept", live, mvcc.ErrCompacted, codes.OutOfRange},
		{"leader changed kept", live, errLeaderChanged, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(clientError(tc.ctx, tc.err)); got != tc.want {
				t.Fatalf("clientError(%v) has code %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if !errors.Is(clientError(live, mvcc.ErrLeaseNotFound), rpctypes.ErrGRPCLeaseNotFound) {
		t.Fatal("store errors must keep etcd's error values")
	}
}
