package storage

import (
	"context"
	"fmt"
	"net/http"

	"cairn/internal/fence"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FenceKeyPrefix is where fence tokens live in the store. The store's own
// leader epoch is FenceKeyPrefix+"leader"; a Lease's holder is
// FenceKeyPrefix+"lease/<namespace>/<name>".
const FenceKeyPrefix = fence.KeyPrefix

// Fence is a leadership a write must still hold to be applied: the write's
// transaction compares the value at Key with Token, so a write made for a
// deposed leader is refused by the store itself, on every replica alike.
type Fence struct {
	Key   string
	Token string
}

type fenceCtxKey struct{}

// WithFence returns a context whose writes are fenced by f.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceCtxKey{}, f)
}

// FenceFrom returns the fence of ctx's writes, if any.
func FenceFrom(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceCtxKey{}).(Fence)
	return f, ok
}

// fencedTxn adds ctx's fence, if any, to a write transaction: a compare on
// the fence key, and a read of it in the failure branch, after the
// caller's own else-ops, so that a failure can be told apart.
type fencedTxn struct {
	fence   Fence
	fenced  bool
	elseIdx int // index of the fence read among the else-ops
}

func newFencedTxn(ctx context.Context) fencedTxn {
	f, ok := FenceFrom(ctx)
	return fencedTxn{fence: f, fenced: ok}
}

func (t *fencedTxn) compares(cmps ...clientv3.Cmp) []clientv3.Cmp {
	if t.fenced {
		cmps = append(cmps, clientv3.Compare(clientv3.Value(t.fence.Key), "=", t.fence.Token))
	}
	return cmps
}

func (t *fencedTxn) elseOps(ops ...clientv3.Op) []clientv3.Op {
	if t.fenced {
		t.elseIdx = len(ops)
		ops = append(ops, clientv3.OpGet(t.fence.Key))
	}
	return ops
}

// check returns the refusal of a failed transaction when the fence no
// longer holds, and nil when the failure had another cause.
func (t *fencedTxn) check(resp *clientv3.TxnResponse) error {
	if !t.fenced || resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[t.elseIdx].GetResponseRange().Kvs
	current := "nothing"
	if len(kvs) == 1 {
		if string(kvs[0].Value) == t.fence.Token {
			return nil
		}
		current = fmt.Sprintf("%q", kvs[0].Value)
	}
	return NewFencedError(t.fence, current)
}

// NewFencedError is the refusal of a write whose leadership has passed:
// 409 Conflict, as for any write whose precondition no longer holds, with
// a message that says what happened. Such a writer should stop, not retry.
func NewFencedError(f Fence, current string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
		Message: fmt.Sprintf("write refused: it was made under leadership %q = %q, but the store now holds %s there; "+
			"a newer leader has taken over, so this one must stop", f.Key, f.Token, current),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: fence.StatusCause, Field: f.Key}}},
	}}
}

// sideFence returns the put that records obj's fence token with obj, for
// resources whose objects carry one (Leases).
func (s *Store) sideFence(obj runtime.Object) (clientv3.Op, bool) {
	if s.opts.FenceOf == nil {
		return clientv3.Op{}, false
	}
	key, token, ok := s.opts.FenceOf(obj)
	if !ok {
		return clientv3.Op{}, false
	}
	return clientv3.OpPut(key, token), true
}
