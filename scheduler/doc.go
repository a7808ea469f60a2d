// Package scheduler places pods on nodes through a framework of small
// plugins (see scheduler/framework), as kube-scheduler does.
//
// Pending pods whose spec.schedulerName names one of the configured
// profiles ("default-scheduler" by default) and whose spec.nodeName is
// empty enter the scheduling queue (scheduler/queue). One goroutine pops
// them in priority order and runs a scheduling cycle against a snapshot
// of the cache (scheduler/cache): PreFilter, Filter over enough nodes
// (percentageOfNodesToScore, starting where the previous cycle stopped),
// PreScore, Score, then the best node is assumed in the cache and
// reserved. Binding (pods/binding) runs asynchronously, so the next cycle
// starts at once; a failed bind forgets the assumed pod and requeues it
// with backoff.
//
// A pod that fits nowhere may preempt lower-priority pods (PostFilter);
// either way it gets PodScheduled=False (reason Unschedulable) and a
// FailedScheduling event whose message aggregates the nodes' reasons as
// Kubernetes words them. A bound pod gets a Scheduled event.
package scheduler
