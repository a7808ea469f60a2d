package nodelifecycle

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// zone is one zone's queue of nodes waiting for a NoExecute taint, and
// the token bucket that paces them: tainting evicts pods, so a zone that
// loses many nodes at once loses their pods gradually.
type zone struct {
	state   zoneState
	rate    float64
	limiter flowcontrol.RateLimiter
	queue   []string
}

// newZone returns a zone without a limiter: the disruption pass that
// created it sets its rate.
func newZone() *zone { return &zone{} }

// setRate replaces the zone's token bucket when the rate changes; a rate
// of zero stops tainting.
func (z *zone) setRate(rate float64, clk clock.WithTicker) {
	if z.limiter != nil && rate == z.rate {
		return
	}
	z.rate = rate
	if rate <= 0 {
		z.limiter = flowcontrol.NewFakeNeverRateLimiter()
		return
	}
	z.limiter = flowcontrol.NewTokenBucketRateLimiterWithClock(float32(rate), 1, clk)
}

func (z *zone) add(node string) {
	if !slices.Contains(z.queue, node) {
		z.queue = append(z.queue, node)
	}
}

func (z *zone) remove(node string) {
	z.queue = slices.DeleteFunc(z.queue, func(n string) bool { return n == node })
}

func (c *Controller) taintLoop(ctx context.Context) {
	t := c.clock.NewTicker(c.cfg.TaintPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			c.taintPass(ctx)
		}
	}
}

// taintPass taints the queued nodes each zone's rate allows. The queue
// is filtered with the informer's copy of each node, but the taint is
// decided on a fresh read: the informer may not yet show the Unknown
// status the monitor pass has just written.
func (c *Controller) taintPass(ctx context.Context) {
	var due []string
	c.mu.Lock()
	for _, z := range c.zones {
		for len(z.queue) > 0 && z.limiter != nil {
			name := z.queue[0]
			if node, err := c.nodes.Get(name); err != nil || hasNoExecuteFor(node) {
				z.queue = z.queue[1:]
				continue
			}
			if !z.limiter.TryAccept() {
				break
			}
			z.queue = z.queue[1:]
			due = append(due, name)
		}
	}
	c.mu.Unlock()
	for _, name := range due {
		var taint corev1.Taint
		wrote, err := c.editTaints(ctx, name, func(n *corev1.Node) (add, remove []corev1.Taint) {
			want, old, ok := noExecuteFor(n)
			if !ok {
				return nil, nil
			}
			taint = want
			return []corev1.Taint{want}, []corev1.Taint{old}
		})
		if err != nil {
			c.log.Warn("tainting an unhealthy node", "node", name, "err", err)
			continue
		}
		if wrote {
			c.log.Info("node tainted", "node", name, "taint", taint.Key)
		}
	}
}

// hasNoExecuteFor reports whether node already carries the NoExecute
// taint its Ready condition calls for.
func hasNoExecuteFor(node *corev1.Node) bool {
	want, _, ok := noExecuteFor(node)
	return ok && hasTaint(node.Spec.Taints, want)
}
