package queue

import (
	"cairn/scheduler/framework"
)

// MoveAllToActiveOrBackoffQueue retries the unschedulable pods that ev
// may help: those rejected by a plugin registered for it. Pods still
// backing off go to backoff, the others to active.
func (q *Queue) MoveAllToActiveOrBackoffQueue(ev framework.ClusterEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	interested, some := q.interestedPlugins(ev)
	if !some {
		return
	}
	for uid, p := range q.unschedulable {
		if q.movedBy(p, interested) {
			delete(q.unschedulable, uid)
			q.unsafeMove(p)
		}
	}
	q.moveRequestCycle = q.schedulingCycle
}

// interestedPlugins returns which plugins ev concerns (nil: every
// plugin) and whether it concerns any at all.
func (q *Queue) interestedPlugins(ev framework.ClusterEvent) (map[string]bool, bool) {
	if q.cfg.PluginEvents == nil {
		return nil, true
	}
	interested := map[string]bool{}
	for name, events := range q.cfg.PluginEvents {
		if events == nil {
			interested[name] = true
			continue
		}
		for _, e := range events {
			if e.Match(ev) {
				interested[name] = true
				break
			}
		}
	}
	return interested, len(interested) > 0
}

// movedBy reports whether a pod rejected by p.UnschedulablePlugins is
// worth retrying when the interested plugins' event happens. A pod no
// plugin rejected (an error) and a plugin the queue does not know are
// retried on any event.
func (q *Queue) movedBy(p *framework.QueuedPodInfo, interested map[string]bool) bool {
	if interested == nil || len(p.UnschedulablePlugins) == 0 {
		return true
	}
	for name := range p.UnschedulablePlugins {
		if _, known := q.cfg.PluginEvents[name]; !known || interested[name] {
			return true
		}
	}
	return false
}

func (q *Queue) unsafeMove(p *framework.QueuedPodInfo) {
	if q.backoffExpiry(p).After(q.cfg.Clock.Now()) {
		q.backoff.addOrUpdate(p)
		return
	}
	q.active.addOrUpdate(p)
	q.cond.Signal()
}
