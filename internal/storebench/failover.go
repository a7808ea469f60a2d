package storebench

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// FailoverResult reports write unavailability across a leader kill and
// whether any acknowledged write was lost.
type FailoverResult struct {
	// Writers is the number of concurrent writers.
	Writers int `json:"writers"`
	// KilledMember and KilledEndpoint name the leader that was killed.
	KilledMember   string `json:"killed_member"`
	KilledEndpoint string `json:"killed_endpoint"`
	// NewLeader names the leader after the kill, if one was found.
	NewLeader string `json:"new_leader,omitempty"`
	// KilledAt is when the kill command returned, since the writers started.
	KilledAt time.Duration `json:"killed_at_ns"`
	// Elapsed is how long the writers ran.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Acked counts acknowledged writes; Failed counts writes that returned
	// an error or timed out (they may or may not have been applied).
	Acked  int `json:"acked"`
	Failed int `json:"failed"`
	// Recovered says whether a write sent after the kill was acknowledged.
	Recovered bool `json:"recovered"`
	// LongestGap is the longest time between consecutive acknowledged
	// writes, from any writer; GapFrom is when it began, since the writers
	// started. It is the write unavailability a client saw.
	LongestGap time.Duration `json:"longest_gap_ns"`
	GapFrom    time.Duration `json:"gap_from_ns"`
	// Verified counts acknowledged writes read back intact from the
	// survivors with linearizable reads; Lost counts the others, and
	// LostKeys lists the first few of them.
	Verified int      `json:"verified"`
	Lost     int      `json:"lost"`
	LostKeys []string `json:"lost_keys,omitempty"`
}

// writerLog is what one failover writer saw. Writers never share it.
type writerLog struct {
	acked  []int64
	ackAt  []time.Time
	failed int
}

// failoverClock is shared by the writers and the coordinator: when the kill
// happened, and whether a write sent after it was acknowledged.
type failoverClock struct {
	killedAt  atomic.Int64
	recovered atomic.Bool
}

// failover runs writers continuously, kills the leader after a warm-up, keeps
// writing until the cluster has recovered and at least Duration has passed
// since the kill, then reads every acknowledged write back from the
// survivors.
func (r *runner) failover(ctx context.Context) (*FailoverResult, error) {
	leader, err := r.findLeader(ctx, 10*time.Second)
	if err != nil {
		return nil, err
	}
	writers := r.cfg.Clients
	res := &FailoverResult{Writers: writers, KilledMember: leader.Name, KilledEndpoint: leader.Endpoint}
	p, err := newPool(r.cfg, r.endpoints, min(r.cfg.Conns, writers))
	if err != nil {
		return res, err
	}
	defer p.close()

	var (
		clock failoverClock
		logs  = make([]writerLog, writers)
		wg    sync.WaitGroup
		start = time.Now()
	)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.log.Info("failover: writing", "writers", writers, "leader", leader.Name)
	for w := range writers {
		wg.Go(func() { r.write(wctx, p, w, &logs[w], &clock) })
	}

	killErr := r.killAfter(ctx, start.Add(r.cfg.Duration/2), leader, &clock)
	if killErr == nil {
		res.KilledAt = time.Unix(0, clock.killedAt.Load()).Sub(start)
		r.awaitRecovery(ctx, &clock)
	}
	end := time.Now()
	cancel()
	wg.Wait()
	res.Elapsed = end.Sub(start)
	res.Recovered = clock.recovered.Load()

	var acks []time.Time
	for _, l := range logs {
		res.Acked += len(l.acked)
		res.Failed += l.failed
		acks = append(acks, l.ackAt...)
	}
	g := longestGap(acks, end)
	res.LongestGap = g.Length()
	if !g.From.IsZero() {
		res.GapFrom = g.From.Sub(start)
	}
	if killErr != nil {
		return res, killErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	r.dropEndpoint(leader.Endpoint)
	r.log.Info("failover: verifying acknowledged writes", "acked", res.Acked, "longest_gap", res.LongestGap)
	if err := r.verify(ctx, logs, res); err != nil {
		return res, err
	}
	if nl, err := r.findLeader(ctx, 5*time.Second); err == nil {
		res.NewLeader = nl.Name
	}
	return res, nil
}

// write is one failover writer: it puts a new key per write, so that every
// acknowledged write can be checked afterwards, and records each ack.
func (r *runner) write(ctx context.Context, p pool, w int, log *writerLog, clock *failoverClock) {
	c := p.get(w)
	for seq := int64(0); ctx.Err() == nil; seq++ {
		key := failoverKey(w, seq)
		sent := time.Now()
		opCtx, cancel := context.WithTimeout(ctx, jitter(r.cfg.WriteTimeout))
		_, err := c.Put(opCtx, key, string(valueFor(key, r.cfg.ValueSize)))
		cancel()
		now := time.Now()
		if err == nil {
			log.acked = append(log.acked, seq)
			log.ackAt = append(log.ackAt, now)
			if k := clock.killedAt.Load(); k != 0 && sent.UnixNano() > k {
				clock.recovered.Store(true)
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		log.failed++
		// A member that refuses at once must not turn the writer into a
		// busy loop that starves the cluster of the cores it needs.
		if d := now.Sub(sent); d < 10*time.Millisecond {
			time.Sleep(10*time.Millisecond - d)
		}
	}
}

// killAfter waits until at, then kills the leader and records when.
func (r *runner) killAfter(ctx context.Context, at time.Time, leader member, clock *failoverClock) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(at)):
	}
	r.log.Info("failover: killing leader", "member", leader.Name, "endpoint", leader.Endpoint)
	if err := r.kill(ctx, leader); err != nil {
		return err
	}
	clock.killedAt.Store(time.Now().UnixNano())
	return nil
}

// awaitRecovery keeps the writers going for Duration after the kill and,
// beyond that, until a write sent after the kill is acknowledged or
// RecoveryTimeout has passed since the kill.
func (r *runner) awaitRecovery(ctx context.Context, clock *failoverClock) {
	killed := time.Unix(0, clock.killedAt.Load())
	minEnd := killed.Add(r.cfg.Duration)
	maxEnd := killed.Add(max(r.cfg.RecoveryTimeout, r.cfg.Duration))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		if now.After(maxEnd) || (now.After(minEnd) && clock.recovered.Load()) {
			if !clock.recovered.Load() {
				r.log.Warn("failover: no write acknowledged since the kill", "waited", now.Sub(killed))
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// dropEndpoint removes a killed member's endpoint from the ones later steps
// use.
func (r *runner) dropEndpoint(endpoint string) {
	kept := r.endpoints[:0]
	for _, ep := range r.endpoints {
		if withScheme(ep, r.cfg.TLS != nil) != endpoint {
			kept = append(kept, ep)
		}
	}
	r.endpoints = kept
}

// jitter draws a write timeout between half of d and d. Writers that got
// stuck together at the kill then retry at scattered instants instead of all
// at once, so the measured gap is not rounded up to a multiple of d.
func jitter(d time.Duration) time.Duration {
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(d-half)
}
