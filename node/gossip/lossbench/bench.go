package lossbench

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cairn/node/gossip"

	"github.com/hashicorp/memberlist"
)

// basePort is the first member's port; the namespace is empty, so any
// port is free.
const basePort = 7946

// Options configure a run. Zero fields take the defaults in brackets.
type Options struct {
	// Members is the cluster size [5].
	Members int
	// Loss is the share of packets dropped [0.10]; negative for none.
	Loss float64
	// Period is how long live members are watched for false deaths, in
	// all [30s]. It is split evenly before each kill.
	Period time.Duration
	// Kills is how many times a member is killed and brought back [3].
	Kills int
	// DetectTimeout bounds the wait for peers to declare a killed member
	// dead [15s].
	DetectTimeout time.Duration
	// Timings tune the failure detector (gossip.DefaultTimings).
	Timings gossip.Timings
	Logger  *slog.Logger
}

func (o *Options) defaults() {
	if o.Members <= 0 {
		o.Members = 5
	}
	if o.Loss == 0 {
		o.Loss = 0.10
	}
	if o.Loss < 0 {
		o.Loss = 0
	}
	if o.Period <= 0 {
		o.Period = 30 * time.Second
	}
	if o.Kills < 0 {
		o.Kills = 0
	} else if o.Kills == 0 {
		o.Kills = 3
	}
	if o.DetectTimeout <= 0 {
		o.DetectTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Kill is what happened after one member was killed.
type Kill struct {
	Victim string
	// First, Second and All are how long after the kill the first peer,
	// the second peer (enough for gossip.Agreed) and every peer declared
	// it dead; zero if they did not within DetectTimeout.
	First, Second, All time.Duration
}

// Report is the outcome of a run.
type Report struct {
	Members int
	Loss    float64
	// Watched is how long live members were watched under loss.
	Watched time.Duration
	// FalseDeaths counts declarations, by any member, that a live member
	// was dead; FalselyDead lists those members.
	FalseDeaths int
	FalselyDead []string
	// FalseAgreements counts the times two members declared the same live
	// member dead within agreementWindow: enough reports for gossip.Agreed
	// to mark a live node NotReady. This is the number the tuning must
	// keep at zero; a lone false death costs nothing but a report.
	FalseAgreements int
	// Suspicions counts probes that failed and started a suspicion, and
	// Refutations the suspicions the suspect refuted: near misses.
	Suspicions, Refutations int
	// Dropped is how many packets the loss rule dropped.
	Dropped uint64
	Kills   []Kill
}

// String summarises the report for people.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d members, %.0f%% packet loss, watched %v: %d false agreements, %d false deaths", r.Members, r.Loss*100, r.Watched.Round(time.Second), r.FalseAgreements, r.FalseDeaths)
	if len(r.FalselyDead) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.FalselyDead, ", "))
	}
	fmt.Fprintf(&b, ", %d suspicions, %d refuted, %d packets dropped\n", r.Suspicions, r.Refutations, r.Dropped)
	for _, k := range r.Kills {
		fmt.Fprintf(&b, "killed %s: declared dead by a first peer after %v, a second after %v, all after %v\n",
			k.Victim, k.First.Round(time.Millisecond), k.Second.Round(time.Millisecond), k.All.Round(time.Millisecond))
	}
	return b.String()
}

// MaxSecond is the slowest time to a second peer's declaration over the
// kills, or -1 if some kill was not detected by two peers.
func (r *Report) MaxSecond() time.Duration {
	var worst time.Duration
	for _, k := range r.Kills {
		if k.Second == 0 {
			return -1
		}
		worst = max(worst, k.Second)
	}
	return worst
}

// bench is one run's cluster and tallies.
type bench struct {
	opts        Options
	ns          *netns
	members     []*memberlist.Memberlist
	watchers    []*watcher
	suspicions  atomic.Int64
	refutations atomic.Int64

	mu sync.Mutex
	// down is the member being killed and brought back, "" otherwise.
	down        string
	killedAt    time.Time
	deadBy      map[string]time.Duration // observer → when it declared down dead
	falseDeaths int
	falselyDead map[string]bool
	// falseBy holds, per live member declared dead, when each observer
	// last did.
	falseBy         map[string]map[string]time.Time
	falseAgreements int
}

// agreementWindow is how close two false deaths of a member must be to
// count as an agreement: reports stay until the reporter sees the member
// alive, which takes about a gossip round, so this is generous.
const agreementWindow = 10 * time.Second

// Run builds the cluster in a fresh network namespace, watches it and
// kills members as opts say, and reports.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts.defaults()
	ns, err := newNetns()
	if err != nil {
		return nil, err
	}
	defer ns.close()
	b := &bench{opts: opts, ns: ns, members: make([]*memberlist.Memberlist, opts.Members), watchers: make([]*watcher, opts.Members), falselyDead: map[string]bool{}, falseBy: map[string]map[string]time.Time{}}
	defer b.shutdown()
	for i := range b.members {
		if err := b.start(i, i == 0); err != nil {
			return nil, err
		}
	}
	if err := b.waitAllAlive(ctx, 20*time.Second); err != nil {
		return nil, fmt.Errorf("lossbench: the cluster did not form without loss: %w", err)
	}
	if opts.Loss > 0 {
		if err := ns.addLoss(opts.Loss); err != nil {
			return nil, err
		}
	}
	rep := &Report{Members: opts.Members, Loss: opts.Loss}
	rounds := max(opts.Kills, 1)
	slice := opts.Period / time.Duration(rounds)
	for round := range rounds {
		start := time.Now()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(slice):
		}
		rep.Watched += time.Since(start)
		if round < opts.Kills {
			k, err := b.kill(ctx, (round+1)%opts.Members)
			if err != nil {
				return nil, err
			}
			rep.Kills = append(rep.Kills, k)
		}
	}
	b.mu.Lock()
	rep.FalseDeaths, rep.FalseAgreements = b.falseDeaths, b.falseAgreements
	for name := range b.falselyDead {
		rep.FalselyDead = append(rep.FalselyDead, name)
	}
	b.mu.Unlock()
	rep.Suspicions, rep.Refutations = int(b.suspicions.Load()), int(b.refutations.Load())
	if opts.Loss > 0 {
		if rep.Dropped, err = ns.dropped(); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func memberName(i int) string { return fmt.Sprintf("m%d", i+1) }

func memberAddr(i int) string { return fmt.Sprintf("127.0.0.1:%d", basePort+i) }

// start starts member i and, unless it is the first, joins it to the
// others (a killed member coming back joins as an agent does, through
// its peers' addresses).
func (b *bench) start(i int, first bool) error {
	logger := log.New(&logCounter{b: b, log: b.opts.Logger.With("member", memberName(i))}, "", 0)
	tr, err := newTransport(b.ns, basePort+i, logger)
	if err != nil {
		return err
	}
	c := memberlist.DefaultLANConfig()
	c.Name = memberName(i)
	c.BindAddr, c.BindPort = "127.0.0.1", basePort+i
	c.AdvertiseAddr, c.AdvertisePort = "127.0.0.1", basePort+i
	c.Transport = tr
	c.Logger = logger
	w := &watcher{b: b, observer: memberName(i)}
	b.watchers[i] = w
	c.Events = w
	b.opts.Timings.Apply(c)
	m, err := memberlist.Create(c)
	if err != nil {
		tr.Shutdown()
		return fmt.Errorf("lossbench: member %s: %w", c.Name, err)
	}
	b.members[i] = m
	var peers []string
	for j := range b.members {
		if j != i {
			peers = append(peers, memberAddr(j))
		}
	}
	if !first {
		if _, err := m.Join(peers); err != nil {
			return fmt.Errorf("lossbench: member %s joining: %w", c.Name, err)
		}
	}
	return nil
}

// kill stops member i without leaving, measures how fast the others
// declare it dead, then brings it back.
func (b *bench) kill(ctx context.Context, i int) (Kill, error) {
	victim := memberName(i)
	b.mu.Lock()
	b.down, b.killedAt, b.deadBy = victim, time.Now(), map[string]time.Duration{}
	b.mu.Unlock()
	// A closed memberlist still fires the suspicion timers it had running:
	// a dead process would not, so its watcher stops listening.
	b.watchers[i].gone.Store(true)
	b.members[i].Shutdown()
	b.opts.Logger.Info("killed", "member", victim)

	k := Kill{Victim: victim}
	deadline := time.Now().Add(b.opts.DetectTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil && len(b.deadTimes()) < b.opts.Members-1 {
		time.Sleep(20 * time.Millisecond)
	}
	times := b.deadTimes()
	if len(times) > 0 {
		k.First = times[0]
	}
	if len(times) > 1 {
		k.Second = times[1]
	}
	if len(times) == b.opts.Members-1 {
		k.All = times[len(times)-1]
	}
	if err := b.start(i, false); err != nil {
		return k, err
	}
	err := b.waitAllAlive(ctx, 30*time.Second)
	b.mu.Lock()
	b.down = ""
	b.mu.Unlock()
	if err != nil {
		return k, fmt.Errorf("lossbench: %s did not come back: %w", victim, err)
	}
	return k, nil
}

// deadTimes returns, in order, when each peer declared the killed member
// dead.
func (b *bench) deadTimes() []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	var times []time.Duration
	for _, d := range b.deadBy {
		times = append(times, d)
	}
	slices.Sort(times)
	return times
}

// waitAllAlive waits until every member sees every member alive.
func (b *bench) waitAllAlive(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		for _, m := range b.members {
			if m.NumMembers() != len(b.members) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("not every member sees every other alive")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (b *bench) shutdown() {
	for _, m := range b.members {
		if m != nil {
			m.Shutdown()
		}
	}
}

// watcher records one member's view of deaths.
type watcher struct {
	b        *bench
	observer string
	gone     atomic.Bool // the member was killed
}

// NotifyJoin implements memberlist.EventDelegate.
func (w *watcher) NotifyJoin(*memberlist.Node) {}

// NotifyUpdate implements memberlist.EventDelegate.
func (w *watcher) NotifyUpdate(*memberlist.Node) {}

// NotifyLeave implements memberlist.EventDelegate: members here never
// leave, so every call is a death.
func (w *watcher) NotifyLeave(n *memberlist.Node) {
	if w.gone.Load() {
		return
	}
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if n.Name == b.down {
		if _, seen := b.deadBy[w.observer]; !seen {
			b.deadBy[w.observer] = time.Since(b.killedAt)
		}
		return
	}
	b.falseDeaths++
	b.falselyDead[n.Name] = true
	b.opts.Logger.Warn("live member declared dead", "member", n.Name, "by", w.observer)
	by := b.falseBy[n.Name]
	if by == nil {
		by = map[string]time.Time{}
		b.falseBy[n.Name] = by
	}
	now := time.Now()
	by[w.observer] = now
	agreeing := 0
	for _, at := range by {
		if now.Sub(at) < agreementWindow {
			agreeing++
		}
	}
	if agreeing == 2 {
		b.falseAgreements++
		b.opts.Logger.Error("live member declared dead by two members: its node would go NotReady", "member", n.Name)
	}
}

// logCounter counts suspicions and refutations in memberlist's log and
// passes the lines on at debug level.
type logCounter struct {
	b   *bench
	log *slog.Logger
}

func (l *logCounter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	switch {
	case strings.Contains(line, "has failed, no acks received"):
		l.b.suspicions.Add(1)
	case strings.Contains(line, "Refuting a suspect message"):
		l.b.refutations.Add(1)
	}
	l.log.Debug(line)
	return len(p), nil
}
