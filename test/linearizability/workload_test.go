package linearizability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// workload drives concurrent clients against the cluster and records what
// they see.
type workload struct {
	// keys are the keys under porcupine's check; onceKeys is the prefix of
	// keys written once each.
	keys     []string
	onceKeys string
	// opTimeout bounds each request: past it the outcome is unknown.
	opTimeout time.Duration
	// think is the pause between a client's requests, which keeps the
	// history small enough to check in seconds.
	think time.Duration
	rec   *recorder

	stop atomic.Bool

	mu          sync.Mutex
	onceAcked   map[string]string // key -> value, acknowledged write-once puts
	onceUnknown int
}

// run is one client's loop until stop is set; seed makes its choices
// reproducible.
func (w *workload) run(id int, cli *clientv3.Client, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	lastRev := map[string]int64{} // what this client last saw of each key
	for seq := 0; !w.stop.Load(); seq++ {
		value := fmt.Sprintf("c%d-%d", id, seq)
		key := w.keys[rng.IntN(len(w.keys))]
		switch p := rng.IntN(100); {
		case p < 40:
			w.get(id, cli, key, lastRev)
		case p < 70:
			w.put(id, cli, key, value, lastRev)
		case p < 95:
			w.cas(id, cli, key, value, lastRev)
		default:
			w.putOnce(cli, fmt.Sprintf("%s%s", w.onceKeys, value), value)
		}
		time.Sleep(w.think)
	}
}

func (w *workload) ctx() (context.Context, context.CancelFunc) {
	// Not derived from a test context: stopping the workload must not turn
	// requests in flight into unknown outcomes.
	return context.WithTimeout(context.Background(), w.opTimeout)
}

func (w *workload) get(id int, cli *clientv3.Client, key string, lastRev map[string]int64) {
	in := kvInput{Kind: opGet, Key: key}
	ctx, cancel := w.ctx()
	defer cancel()
	call := w.rec.now()
	resp, err := cli.Get(ctx, key)
	ret := w.rec.now()
	if err != nil {
		w.rec.unanswered(id, in, call)
		return
	}
	out := kvOutput{Rev: resp.Header.Revision}
	if len(resp.Kvs) > 0 {
		out.Value, out.ModRev = string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
	}
	lastRev[key] = out.ModRev
	w.rec.answered(id, in, call, out, ret)
}

func (w *workload) put(id int, cli *clientv3.Client, key, value string, lastRev map[string]int64) {
	in := kvInput{Kind: opPut, Key: key, Value: value}
	ctx, cancel := w.ctx()
	defer cancel()
	call := w.rec.now()
	resp, err := cli.Put(ctx, key, value)
	ret := w.rec.now()
	if err != nil {
		w.rec.unanswered(id, in, call)
		return
	}
	lastRev[key] = resp.Header.Revision
	w.rec.answered(id, in, call, kvOutput{Rev: resp.Header.Revision}, ret)
}

// cas replaces key only if it is still at the revision this client last
// saw, as Kubernetes updates do; otherwise it reads the current value.
func (w *workload) cas(id int, cli *clientv3.Client, key, value string, lastRev map[string]int64) {
	in := kvInput{Kind: opCAS, Key: key, Value: value, ExpectRev: lastRev[key]}
	ctx, cancel := w.ctx()
	defer cancel()
	call := w.rec.now()
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", in.ExpectRev)).
		Then(clientv3.OpPut(key, value)).
		Else(clientv3.OpGet(key)).
		Commit()
	ret := w.rec.now()
	if err != nil {
		w.rec.unanswered(id, in, call)
		return
	}
	out := kvOutput{Rev: resp.Header.Revision, Succeeded: resp.Succeeded}
	if resp.Succeeded {
		lastRev[key] = resp.Header.Revision
	} else {
		if len(resp.Responses) != 1 || resp.Responses[0].GetResponseRange() == nil {
			// Record what cannot be a valid answer, so the check fails with
			// this operation in view.
			out.ModRev = -1
		} else if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			out.Value, out.ModRev = string(kvs[0].Value), kvs[0].ModRevision
		}
		lastRev[key] = out.ModRev
	}
	w.rec.answered(id, in, call, out, ret)
}

// putOnce writes a key that no one writes again, to check after the
// faults that every acknowledged one is still there.
func (w *workload) putOnce(cli *clientv3.Client, key, value string) {
	ctx, cancel := w.ctx()
	defer cancel()
	_, err := cli.Put(ctx, key, value)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.onceUnknown++
		return
	}
	w.onceAcked[key] = value
}
