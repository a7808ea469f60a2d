package nodelifecycle

import (
	"context"
	"slices"

	"cairn/controllers/internal/clusterutil"

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

// taintPass taints the queued nodes each zone's rate allows.
func (c *Controller) taintPass(ctx context.Context) {
	type job struct {
		node      string
		want, old corev1.Taint
	}
	var jobs []job
	c.mu.Lock()
	for _, z := range c.zones {
		for len(z.queue) > 0 && z.limiter != nil {
			name := z.queue[0]
			node, err := c.nodes.Get(name)
			var want, old corev1.Taint
			needed := false
			if err == nil {
				if cond := clusterutil.NodeCondition(node, corev1.NodeReady); cond != nil {
					switch cond.Status {
					case corev1.ConditionFalse:
						want, old, needed = notReadyTaint(), unreachableTaint(), true
					case corev1.ConditionUnknown:
						want, old, needed = unreachableTaint(), notReadyTaint(), true
					}
				}
				needed = needed && !hasTaint(node.Spec.Taints, want)
			}
			if !needed {
				z.queue = z.queue[1:]
				continue
			}
			if !z.limiter.TryAccept() {
				break
			}
			z.queue = z.queue[1:]
			jobs = append(jobs, job{name, want, old})
		}
	}
	c.mu.Unlock()
	for _, j := range jobs {
		if _, err := c.swapTaints(ctx, j.node, []corev1.Taint{j.want}, []corev1.Taint{j.old}); err != nil {
			c.log.Warn("tainting an unhealthy node", "node", j.node, "err", err)
			continue
		}
		c.log.Info("node tainted", "node", j.node, "taint", j.want.Key)
	}
}
