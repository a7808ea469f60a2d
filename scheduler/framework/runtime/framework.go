// Package runtime builds a profile's plugins from the registry and runs
// them phase by phase; it is the framework.Handle the plugins see.
package runtime

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"cairn/scheduler/config"
	"cairn/scheduler/framework"
	"cairn/scheduler/framework/parallelize"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Options are what the plugins of a profile share.
type Options struct {
	// ClientSet is used by Bind and preemption.
	ClientSet kubernetes.Interface
	// EventRecorder records core/v1 events.
	EventRecorder record.EventRecorder
	// Snapshot is the per-cycle view, refreshed in place by the cache.
	Snapshot framework.NodeInfoLister
	// Nominator tracks nominated pods; nil means none.
	Nominator framework.PodNominator
	// NamespaceLabels resolves namespace selectors; nil means no
	// namespace has labels.
	NamespaceLabels framework.NamespaceLabelsFunc
	// Parallelism is the number of goroutines for per-node work.
	Parallelism int
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
}

// Framework runs one profile's plugins.
type Framework struct {
	name         string
	opts         Options
	parallelizer parallelize.Parallelizer

	plugins    []framework.Plugin
	queueSort  framework.QueueSortPlugin
	preFilter  []framework.PreFilterPlugin
	filter     []framework.FilterPlugin
	postFilter []framework.PostFilterPlugin
	preScore   []framework.PreScorePlugin
	score      []framework.ScorePlugin
	weights    map[string]int64
	reserve    []framework.ReservePlugin
	bind       []framework.BindPlugin
}

var _ framework.Handle = (*Framework)(nil)

// New builds the plugins of profile from registry.
func New(registry framework.Registry, profile config.Profile, opts Options) (*Framework, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f := &Framework{
		name:         profile.SchedulerName,
		opts:         opts,
		parallelizer: parallelize.New(opts.Parallelism),
		weights:      map[string]int64{},
	}
	for _, pc := range profile.EffectivePlugins() {
		factory, ok := registry[pc.Name]
		if !ok {
			return nil, fmt.Errorf("runtime: profile %s: no plugin %q in the registry", f.name, pc.Name)
		}
		pl, err := factory(f)
		if err != nil {
			return nil, fmt.Errorf("runtime: profile %s: plugin %s: %w", f.name, pc.Name, err)
		}
		f.add(pl, int64(pc.Weight))
	}
	if f.queueSort == nil {
		return nil, fmt.Errorf("runtime: profile %s: no queue sort plugin enabled", f.name)
	}
	if len(f.bind) == 0 {
		return nil, fmt.Errorf("runtime: profile %s: no bind plugin enabled", f.name)
	}
	return f, nil
}

// add files a plugin under every phase it implements.
func (f *Framework) add(pl framework.Plugin, weight int64) {
	f.plugins = append(f.plugins, pl)
	if p, ok := pl.(framework.QueueSortPlugin); ok && f.queueSort == nil {
		f.queueSort = p
	}
	if p, ok := pl.(framework.PreFilterPlugin); ok {
		f.preFilter = append(f.preFilter, p)
	}
	if p, ok := pl.(framework.FilterPlugin); ok {
		f.filter = append(f.filter, p)
	}
	if p, ok := pl.(framework.PostFilterPlugin); ok {
		f.postFilter = append(f.postFilter, p)
	}
	if p, ok := pl.(framework.PreScorePlugin); ok {
		f.preScore = append(f.preScore, p)
	}
	if p, ok := pl.(framework.ScorePlugin); ok {
		f.score = append(f.score, p)
		f.weights[pl.Name()] = max(1, weight)
	}
	if p, ok := pl.(framework.ReservePlugin); ok {
		f.reserve = append(f.reserve, p)
	}
	if p, ok := pl.(framework.BindPlugin); ok {
		f.bind = append(f.bind, p)
	}
}

// ProfileName is the scheduler name the profile serves.
func (f *Framework) ProfileName() string { return f.name }

// Plugins returns the enabled plugin names in order.
func (f *Framework) Plugins() []string {
	out := make([]string, len(f.plugins))
	for i, p := range f.plugins {
		out[i] = p.Name()
	}
	return out
}

// QueueSortFunc orders the active queue.
func (f *Framework) QueueSortFunc() framework.LessFunc { return f.queueSort.Less }

// HasPostFilterPlugins reports whether preemption (or another PostFilter)
// is enabled.
func (f *Framework) HasPostFilterPlugins() bool { return len(f.postFilter) > 0 }

// PluginEvents returns, per enabled plugin, the cluster events that may
// make a pod it rejected schedulable; a nil list means every event.
func (f *Framework) PluginEvents() map[string][]framework.ClusterEvent {
	out := make(map[string][]framework.ClusterEvent, len(f.plugins))
	for _, p := range f.plugins {
		if e, ok := p.(framework.EnqueueExtensions); ok {
			out[p.Name()] = append([]framework.ClusterEvent{}, e.EventsToRegister()...)
		} else {
			out[p.Name()] = nil
		}
	}
	return out
}

// SnapshotSharedLister implements framework.Handle.
func (f *Framework) SnapshotSharedLister() framework.NodeInfoLister { return f.opts.Snapshot }

// ClientSet implements framework.Handle.
func (f *Framework) ClientSet() kubernetes.Interface { return f.opts.ClientSet }

// EventRecorder implements framework.Handle.
func (f *Framework) EventRecorder() record.EventRecorder { return f.opts.EventRecorder }

// Parallelizer implements framework.Handle.
func (f *Framework) Parallelizer() parallelize.Parallelizer { return f.parallelizer }

// Nominator implements framework.Handle.
func (f *Framework) Nominator() framework.PodNominator { return f.opts.Nominator }

// Logger implements framework.Handle.
func (f *Framework) Logger() *slog.Logger { return f.opts.Logger }

// NamespaceLabels implements framework.Handle.
func (f *Framework) NamespaceLabels(ns string) labels.Set {
	if f.opts.NamespaceLabels == nil {
		return nil
	}
	return f.opts.NamespaceLabels(ns)
}

// errNoBinder is returned when every bind plugin skipped the pod.
var errNoBinder = errors.New("runtime: no bind plugin bound the pod")
