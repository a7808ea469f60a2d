package linearizability

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxReports bounds how many violations of one kind a run reports.
const maxReports = 10

// checkWatches replays the history from revision 1 on every replica and
// checks that the replicas agree, that the history is well formed, and that
// the resuming watcher saw exactly it. It returns the replayed history.
func checkWatches(t *testing.T, c *cluster, w *resumingWatcher) []event {
	var ref []event
	refFrom := ""
	for i, m := range c.members {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		events, err := replay(ctx, c.admin[i], prefix, stopKey)
		cancel()
		if err != nil {
			t.Errorf("replaying the history on %s: %v", m.name, err)
			continue
		}
		if refFrom == "" {
			ref, refFrom = events, m.name
			if msg := checkHistory(ref); msg != "" {
				t.Errorf("history replayed on %s is not a valid etcd history: %s", m.name, msg)
			}
			continue
		}
		if d := diffEvents(events, ref); d != "" {
			t.Errorf("%s replays a different history than %s: %s", m.name, refFrom, d)
		}
	}
	if refFrom == "" {
		t.Fatal("no replica could replay the history")
	}
	got, resumes, _ := w.result()
	if d := diffEvents(got, ref); d != "" {
		t.Errorf("watcher resumed %d times across replicas saw a different history than a replay from revision 1 on %s: %s",
			resumes, refFrom, d)
	}
	return ref
}

// checkAckedWrites checks every acknowledged write against the committed
// history: it is there, on its key, at the revision its response gave. It
// also checks that the history holds nothing no client wrote, and nothing
// twice.
func checkAckedWrites(t *testing.T, done, unknown []porcupine.Operation, ref []event) {
	invoked := map[string]string{} // value -> key, of every write a client sent
	for _, ops := range [][]porcupine.Operation{done, unknown} {
		for _, op := range ops {
			if in := op.Input.(kvInput); in.Kind != opGet {
				invoked[in.Value] = in.Key
			}
		}
	}
	byValue := map[string]event{}
	count := map[string]int{}
	reports := 0
	report := func(format string, args ...any) {
		if reports++; reports <= maxReports {
			t.Errorf(format, args...)
		}
	}
	for _, e := range ref {
		switch {
		case !e.Put:
			report("unexpected delete in the history: %s", e)
		case e.Key == stopKey:
		case strings.HasPrefix(e.Key, onceKeys):
			// A write-once key is named after its value.
			if e.Key != onceKeys+e.Value {
				report("phantom write in the history: %s", e)
			}
		case invoked[e.Value] != e.Key:
			report("phantom write in the history: %s was never sent by a client", e)
		default:
			byValue[e.Value] = e
			count[e.Value]++
		}
	}
	for v, n := range count {
		if n > 1 {
			report("value %q was committed %d times: a write was applied more than once", v, n)
		}
	}
	for _, op := range done {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if in.Kind == opGet {
			continue
		}
		e, ok := byValue[in.Value]
		switch {
		case !isWrite(in, out):
			if ok {
				report("failed compare-and-swap took effect: client %d %s, but the history has %s", op.ClientId, describeOp(in, out), e)
			}
		case !ok:
			report("acknowledged write lost: client %d %s is not in the committed history", op.ClientId, describeOp(in, out))
		case e.ModRev != out.Rev:
			report("acknowledged write misplaced: client %d %s, but the history has %s", op.ClientId, describeOp(in, out), e)
		}
	}
	if reports > maxReports {
		t.Errorf("... and %d more write problems", reports-maxReports)
	}
}

// checkWriteOnce reads every write-once key back through a linearizable
// read: an acknowledged one must be there with its value.
func checkWriteOnce(t *testing.T, c *cluster, w *workload) {
	cli, err := c.client(c.endpoints()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, onceKeys, clientv3.WithPrefix())
	if err != nil {
		t.Errorf("reading write-once keys: %v", err)
		return
	}
	got := map[string]string{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	lost := 0
	for k, v := range w.onceAcked {
		if got[k] != v {
			if lost++; lost <= maxReports {
				t.Errorf("acknowledged write-once key %s=%q reads back as %q", k, v, got[k])
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged write-once keys lost", lost, len(w.onceAcked))
	}
}

// checkFinalState reads the whole prefix from each replica's local state
// at the last revision of the history: every replica must hold exactly what
// the history leaves.
func checkFinalState(t *testing.T, c *cluster, ref []event) {
	if len(ref) == 0 {
		return
	}
	last := ref[len(ref)-1].ModRev
	want := fold(ref)
	for i, m := range c.members {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		resp, err := c.admin[i].Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithRev(last))
		cancel()
		if err != nil {
			t.Errorf("reading %s at revision %d: %v", m.name, last, err)
			continue
		}
		got := map[string]event{}
		for _, kv := range resp.Kvs {
			got[string(kv.Key)] = event{Put: true, Key: string(kv.Key), Value: string(kv.Value),
				CreateRev: kv.CreateRevision, ModRev: kv.ModRevision, Version: kv.Version}
		}
		bad := 0
		for k, w := range want {
			if got[k] != w {
				if bad++; bad <= maxReports {
					t.Errorf("%s at revision %d: %s is %+v, history says %s", m.name, last, k, got[k], w)
				}
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s at revision %d holds %d keys, history leaves %d", m.name, last, len(got), len(want))
		}
	}
}

// checkLinearizable resolves the unknown writes against the history and
// asks porcupine whether the whole history is linearizable. On failure it
// writes porcupine's visualization to a file and prints its path.
func checkLinearizable(t *testing.T, done, unknown []porcupine.Operation, ref []event) (resolved, time.Duration) {
	committed := map[string]int64{}
	for _, e := range ref {
		if e.Put {
			committed[e.Value] = e.ModRev
		}
	}
	res := resolveUnknown(done, unknown, committed)
	model := kvModel()
	const timeout = 60 * time.Second
	start := time.Now()
	result, info := porcupine.CheckOperationsVerbose(model, res.history, timeout)
	elapsed := time.Since(start)
	switch result {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Errorf("porcupine could not decide within %s whether the %d operations are linearizable", timeout, len(res.history))
	case porcupine.Illegal:
		f, err := os.CreateTemp("", "cairn-lin-*.html")
		if err != nil {
			t.Errorf("history is not linearizable (no visualization: %v)", err)
			break
		}
		defer f.Close()
		if err := porcupine.Visualize(model, info, f); err != nil {
			t.Errorf("history is not linearizable (visualization failed: %v)", err)
			break
		}
		t.Errorf("history is not linearizable: open %s in a browser to see where", f.Name())
	}
	return res, elapsed
}
