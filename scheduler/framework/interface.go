// Package framework defines the scheduler's plugin framework: one small
// interface per phase of a scheduling cycle, the data the plugins share
// (NodeInfo, PodInfo, CycleState) and the Handle through which they reach
// the rest of the scheduler. A nil *Status means success.
//
// A cycle for one pod runs, in order: PreFilter (once), Filter (per
// node), PostFilter (only when no node fits: preemption), PreScore (once,
// with the feasible nodes), Score (per feasible node) and NormalizeScore
// (once per score plugin), then Reserve; binding then runs asynchronously
// through Bind, and Unreserve undoes Reserve if anything after it fails.
package framework

import (
	"context"
	"log/slog"

	"cairn/scheduler/framework/parallelize"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// MaxNodeScore is the highest score a node can get from one plugin after
// normalization.
const MaxNodeScore int64 = 100

// Plugin is the part every plugin shares.
type Plugin interface {
	Name() string
}

// LessFunc orders pods in the active queue.
type LessFunc func(a, b *QueuedPodInfo) bool

// QueueSortPlugin orders the active queue. Exactly one is enabled.
type QueueSortPlugin interface {
	Plugin
	Less(a, b *QueuedPodInfo) bool
}

// PreFilterResult narrows the nodes worth filtering; nil NodeNames means
// all nodes.
type PreFilterResult struct {
	NodeNames sets.Set[string]
}

// PreFilterPlugin computes per-pod state once per cycle. Returning Skip
// skips the plugin's Filter for this pod; a rejection makes the pod
// unschedulable on every node.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *PodInfo) (*PreFilterResult, *Status)
}

// PreFilterExtensions keep a plugin's PreFilter state right when
// preemption or nominated pods add or remove a pod from a node for a
// what-if evaluation.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, pod *PodInfo, add *PodInfo, node *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, pod *PodInfo, remove *PodInfo, node *NodeInfo) *Status
}

// FilterPlugin rules a node in or out for the pod. It must be safe for
// concurrent calls on different nodes.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status
}

// PostFilterResult carries the node a preemption nominated.
type PostFilterResult struct {
	// NominatedNodeName is the node the pod waits for; "" clears a
	// previous nomination.
	NominatedNodeName string
}

// PostFilterPlugin runs when no node fits, to make room (preemption).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *PodInfo, statuses *NodeToStatus) (*PostFilterResult, *Status)
}

// PreScorePlugin computes per-pod scoring state from the feasible nodes.
// Returning Skip skips the plugin's Score for this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *PodInfo, nodes []*NodeInfo) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// ScorePlugin ranks feasible nodes. Score must be safe for concurrent
// calls on different nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil when scores are already in
	// [0, MaxNodeScore].
	ScoreExtensions() ScoreExtensions
}

// ScoreExtensions rescales a plugin's raw scores to [0, MaxNodeScore].
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *PodInfo, scores []NodeScore) *Status
}

// ReservePlugin is told when a node is set aside for the pod (Reserve) and
// when that is undone because a later step failed (Unreserve, which must
// be idempotent and cannot fail).
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string)
}

// BindPlugin binds the pod. A plugin returning Skip passes to the next.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *PodInfo, nodeName string) *Status
}

// EnqueueExtensions says which cluster events may make a pod this
// plugin rejected schedulable. Plugins without it are assumed to care
// about every event.
type EnqueueExtensions interface {
	EventsToRegister() []ClusterEvent
}

// NodeInfoLister reads the scheduling cycle's snapshot of the cluster.
type NodeInfoLister interface {
	// List returns all nodes, in an order that interleaves zones.
	List() []*NodeInfo
	// HavePodsWithAffinityList returns the nodes that have pods with any
	// pod (anti-)affinity.
	HavePodsWithAffinityList() []*NodeInfo
	// HavePodsWithRequiredAntiAffinityList returns the nodes that have
	// pods with required anti-affinity.
	HavePodsWithRequiredAntiAffinityList() []*NodeInfo
	// Get returns a node by name, nil if unknown.
	Get(name string) *NodeInfo
}

// PodNominator tracks pods nominated to nodes by preemption: they are
// counted on their node when lower-priority pods are filtered, so those
// cannot take the room that was made.
type PodNominator interface {
	// NominatedPods returns the nominated pods by node name, nil when
	// there are none. The map is a copy.
	NominatedPods() map[string][]*PodInfo
	NominatedPodsForNode(nodeName string) []*PodInfo
	AddNominatedPod(pod *PodInfo, nodeName string)
	DeleteNominatedPodIfExists(pod *v1.Pod)
}

// NamespaceLabelsFunc returns a namespace's labels, for namespace selectors
// of affinity terms; nil when the namespace is unknown.
type NamespaceLabelsFunc func(namespace string) labels.Set

// Handle is what plugins get from the framework that runs them.
type Handle interface {
	// SnapshotSharedLister is the current cycle's snapshot.
	SnapshotSharedLister() NodeInfoLister
	// ClientSet writes to the API (bindings, preemption).
	ClientSet() kubernetes.Interface
	// EventRecorder records core/v1 events.
	EventRecorder() record.EventRecorder
	// Parallelizer spreads per-node work.
	Parallelizer() parallelize.Parallelizer
	// Nominator tracks nominated pods.
	Nominator() PodNominator
	// NamespaceLabels looks up namespace labels.
	NamespaceLabels(namespace string) labels.Set
	// Logger is the profile's logger.
	Logger() *slog.Logger

	// RunFilterPluginsWithNominatedPods runs the filters as the real cycle
	// does, counting nominated pods of equal or higher priority.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status
	// RunPreFilterExtensionAddPod tells PreFilter plugins a pod was
	// added to node in a what-if evaluation.
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, pod, add *PodInfo, node *NodeInfo) *Status
	// RunPreFilterExtensionRemovePod tells PreFilter plugins a pod was
	// removed from node in a what-if evaluation.
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, pod, remove *PodInfo, node *NodeInfo) *Status
}

// PluginFactory builds a plugin for one profile.
type PluginFactory func(h Handle) (Plugin, error)

// Registry maps plugin names to their factories.
type Registry map[string]PluginFactory
