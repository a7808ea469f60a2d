package linearizability

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// fault is one injected failure: inject breaks something and returns how
// to repair it (also when it fails halfway); the runner holds the fault for
// hold, then heals.
type fault struct {
	name string
	// partition faults need the firewall, so root and iptables.
	partition bool
	hold      time.Duration
	inject    func(ctx context.Context, e *faultEnv) (heal func() error, err error)
}

// faultEnv is what faults act on. Problems a fault observes (a majority
// that elects no leader) go to problem; they fail the test but let the run
// go on, so that one report shows everything.
type faultEnv struct {
	c       *cluster
	fw      *firewall
	logf    func(format string, args ...any)
	problem func(format string, args ...any)
}

// others returns the indexes of every replica but i.
func others(i int) []int {
	var out []int
	for j := range replicas {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// isolate cuts replica i from every other replica.
func (e *faultEnv) isolate(i int) error {
	for _, j := range others(i) {
		if err := e.fw.cut(e.c.members[i], e.c.members[j]); err != nil {
			return err
		}
	}
	return nil
}

// faultSchedule is the sequence of faults a run injects, in order.
func faultSchedule() []fault {
	return []fault{
		{name: "kill -9 the leader, restart it on its data dir", hold: 4 * time.Second, inject: killLeader},
		{name: "isolate a follower", partition: true, hold: 4 * time.Second, inject: isolateFollower},
		{name: "cut the leader from one follower", partition: true, hold: 4 * time.Second, inject: cutLeaderLink},
		{name: "isolate the leader from the majority", partition: true, hold: 5 * time.Second, inject: isolateLeader},
		{name: "split all three replicas", partition: true, hold: 4 * time.Second, inject: splitAll},
		{name: "SIGSTOP the leader", hold: 2 * time.Second, inject: pauseLeader},
	}
}

func killLeader(ctx context.Context, e *faultEnv) (func() error, error) {
	l, err := e.c.waitLeader(ctx, nil)
	if err != nil {
		return nil, err
	}
	m := e.c.members[l]
	e.logf("killing leader %s", m.name)
	m.kill()
	return func() error { return m.start(e.c.bin) }, nil
}

func isolateFollower(ctx context.Context, e *faultEnv) (func() error, error) {
	l, err := e.c.waitLeader(ctx, nil)
	if err != nil {
		return nil, err
	}
	f := (l + 1) % replicas
	e.logf("isolating follower %s (leader %s)", e.c.members[f].name, e.c.members[l].name)
	return e.fw.heal, e.isolate(f)
}

// cutLeaderLink leaves the leader a quorum through one follower while the
// other, cut off from it, keeps calling elections: a partial partition.
func cutLeaderLink(ctx context.Context, e *faultEnv) (func() error, error) {
	l, err := e.c.waitLeader(ctx, nil)
	if err != nil {
		return nil, err
	}
	f := (l + 1) % replicas
	e.logf("cutting leader %s from follower %s", e.c.members[l].name, e.c.members[f].name)
	return e.fw.heal, e.fw.cut(e.c.members[l], e.c.members[f])
}

// isolateLeader puts the leader alone in the minority: the majority must
// elect a new leader, and the old one must stop acting as leader once its
// lease runs out.
func isolateLeader(ctx context.Context, e *faultEnv) (func() error, error) {
	l, err := e.c.waitLeader(ctx, nil)
	if err != nil {
		return nil, err
	}
	old := e.c.members[l]
	e.logf("isolating leader %s", old.name)
	if err := e.isolate(l); err != nil {
		return e.fw.heal, err
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if n, err := e.c.waitLeader(wctx, others(l)); err != nil {
		e.problem("the majority elected no new leader within 3s of isolating leader %s: %v", old.name, err)
	} else {
		e.logf("majority elected %s in %s", e.c.members[n].name, time.Since(start).Round(time.Millisecond))
	}
	if err := e.waitStepDown(ctx, l, time.Second); err != nil {
		e.problem("%v", err)
	}
	return e.fw.heal, nil
}

// waitStepDown waits until replica i no longer claims to lead.
func (e *faultEnv) waitStepDown(ctx context.Context, i int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		st, err := e.c.status(ctx, i)
		if err == nil && st.Leader != st.Header.MemberId {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("isolated replica %s still claims to lead %s after losing its quorum (last status error: %v)", e.c.members[i].name, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func splitAll(ctx context.Context, e *faultEnv) (func() error, error) {
	e.logf("splitting s1 | s2 | s3")
	for i := range replicas {
		for j := i + 1; j < replicas; j++ {
			if err := e.fw.cut(e.c.members[i], e.c.members[j]); err != nil {
				return e.fw.heal, err
			}
		}
	}
	return e.fw.heal, nil
}

func pauseLeader(ctx context.Context, e *faultEnv) (func() error, error) {
	l, err := e.c.waitLeader(ctx, nil)
	if err != nil {
		return nil, err
	}
	m := e.c.members[l]
	e.logf("pausing leader %s", m.name)
	if err := m.signal(syscall.SIGSTOP); err != nil {
		return nil, err
	}
	return func() error { return m.signal(syscall.SIGCONT) }, nil
}

// runFaults injects each fault in turn while the workload runs. It
// returns the names of the faults injected, and an error only when the
// cluster cannot be brought back, which ends the run.
func runFaults(ctx context.Context, e *faultEnv, settle time.Duration) ([]string, error) {
	var injected []string
	for _, f := range faultSchedule() {
		if f.partition && e.fw == nil {
			e.logf("skipped fault %q: no firewall", f.name)
			continue
		}
		if err := runFault(ctx, e, f); err != nil {
			return injected, err
		}
		injected = append(injected, f.name)
		if err := sleep(ctx, settle); err != nil {
			return injected, err
		}
	}
	return injected, nil
}

// runFault injects one fault, holds it, heals it and waits until the
// cluster is healthy again. It heals on every path out.
func runFault(ctx context.Context, e *faultEnv, f fault) error {
	heal, err := f.inject(ctx, e)
	defer func() {
		if heal != nil {
			heal()
		}
	}()
	if err != nil {
		return fmt.Errorf("linearizability: injecting %q: %w", f.name, err)
	}
	if err := sleep(ctx, f.hold); err != nil {
		return err
	}
	h := heal
	heal = nil
	if err := h(); err != nil {
		return fmt.Errorf("linearizability: healing %q: %w", f.name, err)
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := e.c.waitHealthy(rctx); err != nil {
		return fmt.Errorf("linearizability: after healing %q: %w", f.name, err)
	}
	e.logf("healed %q: cluster healthy after %s", f.name, time.Since(start).Round(time.Millisecond))
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return errors.Join(errors.New("linearizability: interrupted"), ctx.Err())
	case <-time.After(d):
		return nil
	}
}
