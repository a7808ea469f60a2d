package linearizability

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Names of what the run writes; everything lives under prefix, which the
// watcher follows.
const (
	prefix   = "/lin/"
	onceKeys = prefix + "once/"
	stopKey  = prefix + "~end" // written last: a stream that shows it has seen everything
	clients  = 8
	keyCount = 6
)

// TestLinearizableUnderFaults runs concurrent clients against a real
// three-replica cluster while leaders crash, partitions come and go and a
// leader freezes, and checks that what the clients saw is linearizable,
// that no acknowledged write is lost, and that a watch resuming across
// replicas sees exactly the committed history.
func TestLinearizableUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("whole-cluster fault test: skipped with -short")
	}
	fw := privileges(t)
	bin := serverBinary(t)
	c := startCluster(t, bin)
	ctx := t.Context()

	w := &workload{
		onceKeys:  onceKeys,
		opTimeout: 2 * time.Second,
		think:     10 * time.Millisecond,
		rec:       newRecorder(),
		onceAcked: map[string]string{},
	}
	for i := range keyCount {
		w.keys = append(w.keys, fmt.Sprintf("%sk%d", prefix, i))
	}

	// The watcher starts on the leader, the first replica the faults kill,
	// so that its stream surely breaks and resumes elsewhere.
	leader, err := c.waitLeader(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	watcher := &resumingWatcher{clients: c.admin, first: leader, prefix: prefix, stall: 2 * time.Second}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	watchDone := make(chan error, 1)
	go func() { watchDone <- watcher.run(wctx, stopKey) }()

	seed := uint64(time.Now().UnixNano())
	t.Logf("workload seed %d", seed)
	var wg sync.WaitGroup
	defer func() {
		// Also on early exits: no client may outlive the test.
		w.stop.Store(true)
		wg.Wait()
	}()
	for id := range clients {
		// The first clients stick to one replica each, the others balance
		// over all.
		eps := c.endpoints()
		if id < replicas {
			eps = eps[id : id+1]
		}
		cli, err := c.client(eps...)
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		wg.Go(func() { w.run(id, cli, seed) })
	}

	env := &faultEnv{c: c, fw: fw, logf: t.Logf, problem: t.Errorf}
	var injected []string
	faultErr := sleep(ctx, 2*time.Second)
	if faultErr == nil {
		injected, faultErr = runFaults(ctx, env, 2*time.Second)
	}
	if faultErr == nil {
		faultErr = sleep(ctx, 2*time.Second)
	}
	w.stop.Store(true)
	wg.Wait()
	if faultErr != nil {
		wcancel()
		<-watchDone
		t.Fatalf("fault injection stopped the run after %v: %v", injected, faultErr)
	}

	writeStopKey(t, c)
	select {
	case err := <-watchDone:
		if err != nil {
			t.Errorf("resuming watcher: %v", err)
		}
	case <-time.After(20 * time.Second):
		wcancel()
		<-watchDone
		t.Errorf("resuming watcher did not reach the end of the history within 20s of it being written")
	}

	ref := checkWatches(t, c, watcher)
	done, unknown, failedReads := w.rec.snapshot()
	checkAckedWrites(t, done, unknown, ref)
	checkWriteOnce(t, c, w)
	checkFinalState(t, c, ref)
	res, elapsed := checkLinearizable(t, done, unknown, ref)
	for _, msg := range checkRevisionOrder(done, 5) {
		t.Errorf("revision went back in real time: %s", msg)
	}

	_, resumes, reasons := watcher.result()
	t.Logf("summary:\n"+
		"  ops answered: %d; writes with unknown outcome: %d (%d took effect, %d did not); reads without answer: %d\n"+
		"  write-once puts: %d acknowledged, %d unknown\n"+
		"  history: %d events; the watcher resumed %d times: %s\n"+
		"  faults injected (%d): %s\n"+
		"  porcupine: %d ops checked in %s",
		len(done), len(unknown), res.applied, res.notApplied, failedReads,
		len(w.onceAcked), w.onceUnknown,
		len(ref), resumes, strings.Join(reasons, "; "),
		len(injected), strings.Join(injected, "; "),
		len(res.history), elapsed.Round(time.Millisecond))
}

// writeStopKey writes the last key of the run, retrying while the cluster
// settles.
func writeStopKey(t *testing.T, c *cluster) {
	cli, err := c.client(c.endpoints()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cli.Put(rctx, stopKey, "end")
		rcancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("writing %s after healing: %v", stopKey, err)
		}
	}
}
