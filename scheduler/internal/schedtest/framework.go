package schedtest

import (
	"context"
	"testing"

	"cairn/scheduler/cache"
	"cairn/scheduler/config"
	"cairn/scheduler/framework"
	"cairn/scheduler/framework/runtime"
	"cairn/scheduler/plugins"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Cluster is a snapshot of pods and nodes with the default profile's
// framework over it, to test plugins against real neighbours.
type Cluster struct {
	Snapshot  *cache.Snapshot
	Framework *runtime.Framework
}

// Option changes the framework's options.
type Option func(*runtime.Options)

// WithNamespaceLabels gives namespaces labels, for namespace selectors.
func WithNamespaceLabels(ns map[string]map[string]string) Option {
	return func(o *runtime.Options) {
		o.NamespaceLabels = func(n string) labels.Set { return ns[n] }
	}
}

// WithClientSet sets the API client (a fake one in unit tests).
func WithClientSet(cs kubernetes.Interface) Option {
	return func(o *runtime.Options) { o.ClientSet = cs }
}

// WithNominator sets the nominator.
func WithNominator(n framework.PodNominator) Option {
	return func(o *runtime.Options) { o.Nominator = n }
}

// NewCluster snapshots pods (placed by spec.nodeName) and nodes and
// builds the default profile on it, with parallelism 2.
func NewCluster(t testing.TB, pods []*v1.Pod, nodes []*v1.Node, opts ...Option) *Cluster {
	t.Helper()
	snap := cache.NewSnapshot(pods, nodes)
	o := runtime.Options{Snapshot: snap, Parallelism: 2}
	for _, f := range opts {
		f(&o)
	}
	fwk, err := runtime.New(plugins.NewRegistry(), config.Profile{SchedulerName: config.DefaultSchedulerName}, o)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Snapshot: snap, Framework: fwk}
}

// Node returns the snapshot's NodeInfo of name.
func (c *Cluster) Node(t testing.TB, name string) *framework.NodeInfo {
	t.Helper()
	ni := c.Snapshot.Get(name)
	if ni == nil {
		t.Fatalf("no node %s in the snapshot", name)
	}
	return ni
}

// Filter runs pl's PreFilter (if any) and then its Filter on every node,
// and returns each node's status (nil: fits). A PreFilter rejection is
// returned for every node; a Skip makes every node fit.
func (c *Cluster) Filter(t testing.TB, pl framework.Plugin, pod *v1.Pod) map[string]*framework.Status {
	t.Helper()
	pi := framework.NewPodInfo(pod)
	state := framework.NewCycleState()
	out := map[string]*framework.Status{}
	if pf, ok := pl.(framework.PreFilterPlugin); ok {
		_, s := pf.PreFilter(context.Background(), state, pi)
		switch {
		case s.IsSkip():
			for _, ni := range c.Snapshot.List() {
				out[ni.Name()] = nil
			}
			return out
		case s.Code() == framework.Error:
			t.Fatalf("PreFilter: %v", s.AsError())
		case !s.IsSuccess():
			for _, ni := range c.Snapshot.List() {
				out[ni.Name()] = s
			}
			return out
		}
	}
	f := pl.(framework.FilterPlugin)
	for _, ni := range c.Snapshot.List() {
		s := f.Filter(context.Background(), state, pi, ni)
		if s.Code() == framework.Error {
			t.Fatalf("Filter %s: %v", ni.Name(), s.AsError())
		}
		out[ni.Name()] = s
	}
	return out
}

// Score runs pl's PreScore (if any) with every node as feasible, then
// Score and NormalizeScore, and returns each node's final score; nil when
// PreScore skipped the plugin.
func (c *Cluster) Score(t testing.TB, pl framework.Plugin, pod *v1.Pod) map[string]int64 {
	t.Helper()
	pi := framework.NewPodInfo(pod)
	state := framework.NewCycleState()
	nodes := c.Snapshot.List()
	if ps, ok := pl.(framework.PreScorePlugin); ok {
		s := ps.PreScore(context.Background(), state, pi, nodes)
		if s.IsSkip() {
			return nil
		}
		if !s.IsSuccess() {
			t.Fatalf("PreScore: %v", s.AsError())
		}
	}
	sp := pl.(framework.ScorePlugin)
	scores := make([]framework.NodeScore, len(nodes))
	for i, ni := range nodes {
		v, s := sp.Score(context.Background(), state, pi, ni)
		if !s.IsSuccess() {
			t.Fatalf("Score %s: %v", ni.Name(), s.AsError())
		}
		scores[i] = framework.NodeScore{Name: ni.Name(), Score: v}
	}
	if ext := sp.ScoreExtensions(); ext != nil {
		if s := ext.NormalizeScore(context.Background(), state, pi, scores); !s.IsSuccess() {
			t.Fatalf("NormalizeScore: %v", s.AsError())
		}
	}
	out := map[string]int64{}
	for _, s := range scores {
		out[s.Name] = s.Score
	}
	return out
}

// Messages flattens Filter's result to node → message ("" = fits).
func Messages(m map[string]*framework.Status) map[string]string {
	out := map[string]string{}
	for n, s := range m {
		out[n] = s.Message()
	}
	return out
}

// Plugin builds a plugin from its factory over the cluster's framework.
func (c *Cluster) Plugin(t testing.TB, f framework.PluginFactory) framework.Plugin {
	t.Helper()
	pl, err := f(c.Framework)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}
