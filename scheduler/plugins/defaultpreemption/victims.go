package defaultpreemption

import (
	"context"
	"math"
	"sort"
	"time"

	"cairn/scheduler/framework"
)

// selectVictims finds the fewest, least important pods to evict from ni
// (a copy) for pod to fit; state is a copy too.
func (pl *DefaultPreemption) selectVictims(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, ni *framework.NodeInfo) ([]*framework.PodInfo, *framework.Status) {
	var lower []*framework.PodInfo
	for _, p := range ni.Pods {
		if p.Priority < pod.Priority {
			lower = append(lower, p)
		}
	}
	if len(lower) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}
	remove := func(p *framework.PodInfo) *framework.Status {
		if err := ni.RemovePod(p.Pod); err != nil {
			return framework.AsStatus(err)
		}
		return pl.h.RunPreFilterExtensionRemovePod(ctx, state, pod, p, ni)
	}
	for _, p := range lower {
		if s := remove(p); !s.IsSuccess() {
			return nil, s
		}
	}
	if s := pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); !s.IsSuccess() {
		return nil, s
	}
	// Reprieve the most important pods first, so the victims are the
	// least important ones that must go.
	sort.SliceStable(lower, func(i, j int) bool { return moreImportant(lower[i], lower[j]) })
	var victims []*framework.PodInfo
	for _, p := range lower {
		ni.AddPod(p)
		if s := pl.h.RunPreFilterExtensionAddPod(ctx, state, pod, p, ni); !s.IsSuccess() {
			return nil, s
		}
		if pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni).IsSuccess() {
			continue
		}
		if s := remove(p); !s.IsSuccess() {
			return nil, s
		}
		victims = append(victims, p)
	}
	if len(victims) == 0 {
		// The pod fits without evicting anything: the filters disagree
		// with the cycle that sent us here. Not a candidate.
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}
	return victims, nil
}

// moreImportant orders pods by priority, then by age: an older pod has
// done more work that eviction would throw away.
func moreImportant(a, b *framework.PodInfo) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return startTime(a).Before(startTime(b))
}

func startTime(p *framework.PodInfo) time.Time {
	if p.Pod.Status.StartTime != nil {
		return p.Pod.Status.StartTime.Time
	}
	return p.Pod.CreationTimestamp.Time
}

// pickOne chooses among candidates by, in order: the lowest highest
// victim priority, the lowest sum of victim priorities, the fewest
// victims, and the latest start among the highest-priority victims.
func pickOne(cs []candidate) candidate {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if ha, hb := highest(a), highest(b); ha != hb {
			return ha < hb
		}
		if sa, sb := prioritySum(a), prioritySum(b); sa != sb {
			return sa < sb
		}
		if len(a.victims) != len(b.victims) {
			return len(a.victims) < len(b.victims)
		}
		return earliestTopStart(a).After(earliestTopStart(b))
	})
	return cs[0]
}

func highest(c candidate) int32 {
	h := int32(math.MinInt32)
	for _, v := range c.victims {
		h = max(h, v.Priority)
	}
	return h
}

// prioritySum offsets each priority so negative priorities still add up
// to less than positive ones.
func prioritySum(c candidate) int64 {
	var s int64
	for _, v := range c.victims {
		s += int64(v.Priority) - math.MinInt32 + 1
	}
	return s
}

// earliestTopStart is the earliest start among the highest-priority
// victims: evicting pods that started recently loses less work.
func earliestTopStart(c candidate) time.Time {
	h := highest(c)
	var t time.Time
	for _, v := range c.victims {
		if v.Priority != h {
			continue
		}
		if s := startTime(v); t.IsZero() || s.Before(t) {
			t = s
		}
	}
	return t
}
