package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/types"
)

// Allocator errors; callers turn them into API errors.
var (
	errAllocated  = errors.New("apiserver: already allocated")
	errNotInRange = errors.New("apiserver: not in the valid range")
	errRangeFull  = errors.New("apiserver: range is full")
)

// allocationGrace is how old an allocation must be before it may be
// found orphaned: an allocation is made just before its owner is stored,
// and an owner being created must never lose it.
const allocationGrace = 3 * time.Minute

// owner is who holds an allocated member; it is the value of the
// member's key.
type owner struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Since is when the member was allocated, to tell an owner still
	// being created from an orphan.
	Since time.Time `json:"since"`
}

// allocator hands out the members of a range (service cluster IPs, node
// ports), one store key per member under prefix (prefix + "10.96.0.10"),
// written by a create-if-absent transaction. Two API servers allocating
// at once can thus never both get a member, and neither has to retry
// because the other took some other member, as they would when sharing
// one bitmap updated by compare-and-swap. The key's value names the
// owner, so that only the owner releases a member and orphans (whose
// owner was never stored, or was deleted by a server that crashed before
// releasing) can be found and collected.
type allocator struct {
	kv     clientv3.KV
	prefix string
	r      allocRange
	// reserved offsets (the kubernetes service's IP) are only ever
	// allocated by request, never dynamically.
	reserved uint64
	// static is where dynamic allocation starts looking: offsets below
	// it are tried last (see staticBand).
	static uint64
	// grace is how old an allocation must be to be judged an orphan
	// (allocationGrace).
	grace time.Duration
	// orphaned reports whether o no longer holds member, for allocations
	// older than grace; nil means never.
	orphaned func(ctx context.Context, o owner, member string) (bool, error)
}

func (a *allocator) key(member string) string { return a.prefix + member }

// claim allocates a requested member to o. A member o holds already is
// its own (an update retried after a conflict claims again); one held by
// an orphan is taken over; otherwise an allocated member is errAllocated.
func (a *allocator) claim(ctx context.Context, member string, o owner) error {
	if _, ok := a.r.offset(member); !ok {
		return errNotInRange
	}
	ok, held, rev, err := a.create(ctx, member, o)
	if err != nil || ok {
		return err
	}
	if held.UID != "" && held.UID == o.UID {
		return nil
	}
	orphan, err := a.isOrphan(ctx, held, member)
	if err != nil {
		return err
	}
	if !orphan {
		return errAllocated
	}
	value, err := json.Marshal(o)
	if err != nil {
		return err
	}
	resp, err := a.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(a.key(member)), "=", rev)).
		Then(clientv3.OpPut(a.key(member), string(value))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errAllocated
	}
	return nil
}

// create writes member's key for o if it does not exist; otherwise it
// returns the current owner and the key's revision.
func (a *allocator) create(ctx context.Context, member string, o owner) (ok bool, held owner, rev int64, err error) {
	value, err := json.Marshal(o)
	if err != nil {
		return false, owner{}, 0, err
	}
	key := a.key(member)
	resp, err := a.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return false, owner{}, 0, err
	}
	if resp.Succeeded {
		return true, owner{}, 0, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return false, owner{}, 0, errAllocated // gone again meanwhile; let the caller try another
	}
	_ = json.Unmarshal(kvs[0].Value, &held) // an unreadable owner is never an orphan (zero Since)
	return false, held, kvs[0].ModRevision, nil
}

func (a *allocator) isOrphan(ctx context.Context, o owner, member string) (bool, error) {
	if a.orphaned == nil || o.Since.IsZero() || time.Since(o.Since) < a.grace {
		return false, nil
	}
	return a.orphaned(ctx, o, member)
}

// next allocates any free member to o: a random one above the static
// band, else one in it, never a reserved one.
func (a *allocator) next(ctx context.Context, o owner) (string, error) {
	taken, err := a.taken(ctx)
	if err != nil {
		return "", err
	}
	var found string
	var ferr error
	try := func(off uint64) bool {
		if taken[off] {
			return false
		}
		member := a.r.member(off)
		ok, _, _, err := a.create(ctx, member, o)
		switch {
		case err != nil && !errors.Is(err, errAllocated):
			ferr = err
			return true
		case ok:
			found = member
			return true
		}
		taken[off] = true // another server got there first
		return false
	}
	if walk(a.static, a.r.size(), try) || walk(a.reserved, a.static, try) {
		return found, ferr
	}
	return "", errRangeFull
}

// walk calls try on each offset in [lo, hi), starting at a random one
// and wrapping around, until try returns true; it reports whether it did.
func walk(lo, hi uint64, try func(off uint64) bool) bool {
	if lo >= hi {
		return false
	}
	n := hi - lo
	start := rand.Uint64N(n)
	for i := uint64(0); i < n; i++ {
		if try(lo + (start+i)%n) {
			return true
		}
	}
	return false
}

// taken returns the offsets allocated now, from one keys-only read.
func (a *allocator) taken(ctx context.Context) (map[uint64]bool, error) {
	resp, err := a.kv.Get(ctx, a.prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	taken := make(map[uint64]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if off, ok := a.r.offset(strings.TrimPrefix(string(kv.Key), a.prefix)); ok {
			taken[off] = true
		}
	}
	return taken, nil
}

// free reports whether member could be claimed now, for dry runs.
func (a *allocator) free(ctx context.Context, member string) error {
	if _, ok := a.r.offset(member); !ok {
		return errNotInRange
	}
	resp, err := a.kv.Get(ctx, a.key(member), clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	if resp.Count > 0 {
		return errAllocated
	}
	return nil
}

// anyFree returns a member that is free now without allocating it, for
// dry runs.
func (a *allocator) anyFree(ctx context.Context) (string, error) {
	taken, err := a.taken(ctx)
	if err != nil {
		return "", err
	}
	var found string
	try := func(off uint64) bool {
		if taken[off] {
			return false
		}
		found = a.r.member(off)
		return true
	}
	if walk(a.static, a.r.size(), try) || walk(a.reserved, a.static, try) {
		return found, nil
	}
	return "", errRangeFull
}

// release frees member if uid still holds it.
func (a *allocator) release(ctx context.Context, member string, uid types.UID) error {
	key := a.key(member)
	resp, err := a.kv.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return err
	}
	var held owner
	if err := json.Unmarshal(resp.Kvs[0].Value, &held); err != nil || held.UID != uid {
		return nil
	}
	_, err = a.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpDelete(key)).
		Commit()
	return err
}

// collect frees every orphaned allocation and returns how many it freed.
// Each is deleted only if unchanged since it was judged, so collecting on
// several servers at once is safe.
func (a *allocator) collect(ctx context.Context) (int, error) {
	resp, err := a.kv.Get(ctx, a.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	freed := 0
	for _, kv := range resp.Kvs {
		var o owner
		if err := json.Unmarshal(kv.Value, &o); err != nil {
			continue
		}
		member := strings.TrimPrefix(string(kv.Key), a.prefix)
		orphan, err := a.isOrphan(ctx, o, member)
		if err != nil {
			return freed, err
		}
		if !orphan {
			continue
		}
		tr, err := a.kv.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).
			Commit()
		if err != nil {
			return freed, err
		}
		if tr.Succeeded {
			freed++
		}
	}
	return freed, nil
}
