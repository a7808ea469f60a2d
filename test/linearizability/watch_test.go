package linearizability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// event is one watch event, reduced to what must match between streams.
type event struct {
	Put       bool
	Key       string
	Value     string
	CreateRev int64
	ModRev    int64
	Version   int64
}

func (e event) String() string {
	if !e.Put {
		return fmt.Sprintf("delete %s@%d", e.Key, e.ModRev)
	}
	return fmt.Sprintf("put %s=%q mod=%d create=%d ver=%d", e.Key, e.Value, e.ModRev, e.CreateRev, e.Version)
}

func toEvent(ev *mvccpb.Event) event {
	return event{
		Put:       ev.Type == mvccpb.PUT,
		Key:       string(ev.Kv.Key),
		Value:     string(ev.Kv.Value),
		CreateRev: ev.Kv.CreateRevision,
		ModRev:    ev.Kv.ModRevision,
		Version:   ev.Kv.Version,
	}
}

// resumingWatcher watches a prefix from revision 1 through the raw gRPC
// Watch API, and whenever its stream breaks or stalls, resumes on the next
// replica from the revision after the last event it saw, as a careful
// client (an informer, the API server's watch cache) does. What it collects
// must equal the committed history exactly.
type resumingWatcher struct {
	clients []*clientv3.Client // one per replica
	first   int                // the replica to watch first
	prefix  string
	// stall is how long a stream may stay silent while clients write
	// before the watcher gives up on that replica and moves on.
	stall time.Duration

	mu      sync.Mutex
	events  []event
	resumes int
	reasons []string // why the first streams ended, and on which replica
}

// maxReasons bounds the resume reasons a watcher keeps for the report.
const maxReasons = 20

// run watches until ctx ends or an event for stopKey arrives, and returns
// an error only for what a resume cannot fix (a compacted start revision).
func (w *resumingWatcher) run(ctx context.Context, stopKey string) error {
	next := int64(1)
	for replica := w.first; ; replica = (replica + 1) % len(w.clients) {
		done, err := w.stream(ctx, w.clients[replica], next, stopKey)
		if done || ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errCompacted) {
			return err
		}
		w.mu.Lock()
		if w.resumes++; len(w.reasons) < maxReasons {
			w.reasons = append(w.reasons, fmt.Sprintf("s%d: %v", replica+1, err))
		}
		if n := len(w.events); n > 0 {
			next = w.events[n-1].ModRev + 1
		}
		w.mu.Unlock()
		// A replica that is down fails at once: do not spin through them.
		if sleep(ctx, 100*time.Millisecond) != nil {
			return nil
		}
	}
}

// errCompacted is returned when the history the watcher needs is gone.
var errCompacted = errors.New("linearizability: watch start revision compacted")

// stream runs one watch stream from rev on one replica. done is true once
// the stop key was seen. A timer that every event pushes back cancels the
// stream when it stalls, which also bounds dialing a dead or paused replica.
func (w *resumingWatcher) stream(ctx context.Context, cli *clientv3.Client, rev int64, stopKey string) (done bool, err error) {
	sctx, cancel := context.WithCancelCause(clientv3.WithRequireLeader(ctx))
	defer cancel(nil)
	timer := time.AfterFunc(w.stall, func() { cancel(fmt.Errorf("no event for %s", w.stall)) })
	defer timer.Stop()
	why := func(err error) error {
		if sctx.Err() != nil && ctx.Err() == nil {
			return context.Cause(sctx)
		}
		if err == io.EOF {
			return errors.New("stream closed by server")
		}
		return err
	}
	s, err := pb.NewWatchClient(cli.ActiveConnection()).Watch(sctx)
	if err != nil {
		return false, why(err)
	}
	req := &pb.WatchCreateRequest{Key: []byte(w.prefix), RangeEnd: []byte(clientv3.GetPrefixRangeEnd(w.prefix)), StartRevision: rev}
	if err := s.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: req}}); err != nil {
		return false, why(err)
	}
	for {
		r, err := s.Recv()
		if err != nil {
			return false, why(err)
		}
		if r.CompactRevision > 0 {
			return false, fmt.Errorf("%w: start %d, compacted up to %d", errCompacted, rev, r.CompactRevision)
		}
		if r.Canceled {
			return false, fmt.Errorf("watch canceled by server: %s", r.CancelReason)
		}
		if len(r.Events) == 0 {
			continue
		}
		timer.Reset(w.stall)
		w.mu.Lock()
		for _, ev := range r.Events {
			w.events = append(w.events, toEvent(ev))
			done = done || string(ev.Kv.Key) == stopKey
		}
		w.mu.Unlock()
		if done {
			return true, nil
		}
	}
}

// result returns what the watcher collected, how often it had to resume,
// and why (the first few times).
func (w *resumingWatcher) result() (events []event, resumes int, reasons []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]event(nil), w.events...), w.resumes, append([]string(nil), w.reasons...)
}

// replay reads the whole history of a prefix from one replica with a fresh
// watch from revision 1, up to and including the event for stopKey.
func replay(ctx context.Context, cli *clientv3.Client, prefix, stopKey string) ([]event, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []event
	for resp := range cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(1)) {
		if err := resp.Err(); err != nil {
			return out, fmt.Errorf("linearizability: replay watch: %w", err)
		}
		for _, ev := range resp.Events {
			out = append(out, toEvent(ev))
			if string(ev.Kv.Key) == stopKey {
				return out, nil
			}
		}
	}
	return out, fmt.Errorf("linearizability: replay watch ended before %s: %w", stopKey, context.Cause(ctx))
}

// diffEvents describes the first difference between two event sequences,
// or returns "" when they are equal.
func diffEvents(got, want []event) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			prev := "start of history"
			if i > 0 {
				prev = want[i-1].String()
			}
			return fmt.Sprintf("event %d differs (after %s): got %s, want %s", i, prev, got[i], want[i])
		}
	}
	switch {
	case len(got) > len(want):
		return fmt.Sprintf("%d extra events, first %s", len(got)-len(want), got[len(want)])
	case len(got) < len(want):
		return fmt.Sprintf("%d events missing, first %s", len(want)-len(got), want[len(got)])
	}
	return ""
}

// checkHistory checks that a replayed history is a sane etcd history:
// revisions strictly increase (one write per revision in this test) and
// each key's versions count up from 1 with the right create revision.
func checkHistory(events []event) string {
	type keyState struct{ create, version int64 }
	keys := map[string]keyState{}
	var last int64
	for i, e := range events {
		if e.ModRev <= last {
			return fmt.Sprintf("event %d (%s) has revision %d, not above the previous %d", i, e, e.ModRev, last)
		}
		last = e.ModRev
		k := keys[e.Key]
		if !e.Put {
			delete(keys, e.Key)
			continue
		}
		if k.version == 0 {
			k.create = e.ModRev
		}
		k.version++
		if e.CreateRev != k.create || e.Version != k.version {
			return fmt.Sprintf("event %d (%s): want create=%d ver=%d", i, e, k.create, k.version)
		}
		keys[e.Key] = k
	}
	return ""
}

// fold returns the state a history leaves: each live key's last event.
func fold(events []event) map[string]event {
	state := map[string]event{}
	for _, e := range events {
		if e.Put {
			state[e.Key] = e
		} else {
			delete(state, e.Key)
		}
	}
	return state
}
