package linearizability

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// recorder collects the operations of all clients with their invocation and
// response times on one monotonic clock.
type recorder struct {
	base time.Time

	mu      sync.Mutex
	done    []porcupine.Operation // answered operations
	unknown []porcupine.Operation // writes whose outcome is unknown
	failed  int                   // reads that got no answer (no effect)
}

func newRecorder() *recorder { return &recorder{base: time.Now()} }

// now is the current time in nanoseconds since the recorder started.
func (r *recorder) now() int64 { return int64(time.Since(r.base)) }

// answered records an operation the store answered.
func (r *recorder) answered(client int, in kvInput, call int64, out kvOutput, ret int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = append(r.done, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// unanswered records an operation that got an error or a timeout. A read
// without an answer tells nothing and changed nothing, so only writes are
// kept, to be resolved against the committed history later.
func (r *recorder) unanswered(client int, in kvInput, call int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if in.Kind == opGet {
		r.failed++
		return
	}
	r.unknown = append(r.unknown, porcupine.Operation{ClientId: client, Input: in, Call: call})
}

// snapshot returns copies of the answered and unknown operations.
func (r *recorder) snapshot() (done, unknown []porcupine.Operation, failedReads int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.done...), append([]porcupine.Operation(nil), r.unknown...), r.failed
}

// resolved is the outcome of resolving unknown writes.
type resolved struct {
	history    []porcupine.Operation
	applied    int // unknown writes found in the committed history
	notApplied int // unknown writes that never took effect
}

// resolveUnknown completes a history with the writes whose outcome the
// clients never learned. committed maps every value written under the
// checked keys to the revision that wrote it, from a complete watch replay.
// A write found there took effect: it gets the answer the store would have
// given, and a return time at the end of the history, since all we know is
// that it happened after its call. A write not found there never took
// effect and is dropped, as the etcd robustness tests do.
func resolveUnknown(done, unknown []porcupine.Operation, committed map[string]int64) resolved {
	end := int64(0)
	for _, op := range done {
		end = max(end, op.Return)
	}
	for _, op := range unknown {
		end = max(end, op.Call)
	}
	out := resolved{history: append([]porcupine.Operation(nil), done...)}
	for _, op := range unknown {
		in := op.Input.(kvInput)
		rev, ok := committed[in.Value]
		if !ok {
			out.notApplied++
			continue
		}
		out.applied++
		op.Output = kvOutput{Rev: rev, Succeeded: in.Kind == opCAS}
		op.Return = end + 1
		out.history = append(out.history, op)
	}
	return out
}

// checkRevisionOrder checks the one property per-key partitions cannot see:
// the store revision never goes back in real time across keys. An operation
// invoked after another returned must see at least that one's revision, and
// a write must create a newer one. Only answered operations count. It
// returns at most limit violations.
func checkRevisionOrder(ops []porcupine.Operation, limit int) []string {
	byReturn := append([]porcupine.Operation(nil), ops...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	byCall := append([]porcupine.Operation(nil), ops...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })

	var errs []string
	var maxRev int64
	var maxOp porcupine.Operation
	next := 0
	for _, b := range byCall {
		for next < len(byReturn) && byReturn[next].Return < b.Call {
			if r := byReturn[next].Output.(kvOutput).Rev; r > maxRev {
				maxRev, maxOp = r, byReturn[next]
			}
			next++
		}
		in, out := b.Input.(kvInput), b.Output.(kvOutput)
		bad := out.Rev < maxRev || (isWrite(in, out) && out.Rev == maxRev)
		if bad && len(errs) < limit {
			errs = append(errs, fmt.Sprintf("client %d %s (called at %s) saw revision %d, but client %d %s had returned revision %d before (at %s)",
				b.ClientId, describeOp(in, out), time.Duration(b.Call),
				out.Rev, maxOp.ClientId, describeOp(maxOp.Input.(kvInput), maxOp.Output.(kvOutput)), maxRev, time.Duration(maxOp.Return)))
		}
	}
	return errs
}
