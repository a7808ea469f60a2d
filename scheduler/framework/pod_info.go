package framework

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// PodInfo is a pod with what the plugins would otherwise recompute on
// every node of every cycle: its requests, parsed affinity terms and host
// ports. It is immutable once built; a changed pod gets a new PodInfo.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is what the pod occupies (see PodRequests).
	Requests Resource
	// NonZeroRequests is Requests with defaults for unset cpu and memory.
	NonZeroRequests Resource
	// Priority is spec.priority, 0 when unset.
	Priority int32
	// NodeAffinity matches spec.nodeSelector and the required node
	// affinity together.
	NodeAffinity nodeaffinity.RequiredNodeAffinity

	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// HostPorts are the container ports bound on the node.
	HostPorts []v1.ContainerPort
	// ParseErr is set when an affinity term has an invalid selector; the
	// pod is then unschedulable with that error.
	ParseErr error
}

// AffinityTerm is a pod (anti-)affinity term with its selectors parsed.
type AffinityTerm struct {
	// Namespaces are the namespaces named by the term; the pod's own
	// when it names none and has no namespace selector.
	Namespaces sets.Set[string]
	// NamespaceSelector is nil when the term has none.
	NamespaceSelector labels.Selector
	Selector          Selector
	TopologyKey       string
	// onlyNamespace is the single namespace the term matches when it has
	// no namespace selector: the common case, compared without hashing.
	onlyNamespace string
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches reports whether pod is selected by the term; nsLabels are the
// labels of pod's namespace, needed only for namespace selectors.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.onlyNamespace != "" {
		if pod.Namespace != t.onlyNamespace {
			return false
		}
	} else if !t.Namespaces.Has(pod.Namespace) && (t.NamespaceSelector == nil || !t.NamespaceSelector.Matches(nsLabels)) {
		return false
	}
	return t.Selector.Matches(pod.Labels)
}

// NewPodInfo computes a PodInfo.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{
		Pod:             pod,
		Requests:        PodRequests(pod),
		NonZeroRequests: PodNonZeroRequests(pod),
		NodeAffinity:    nodeaffinity.GetRequiredNodeAffinity(pod),
		Priority:        PodPriority(pod),
	}
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				pi.HostPorts = append(pi.HostPorts, p)
			}
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		var errs []error
		collect := func(err error) {
			if err != nil {
				errs = append(errs, err)
			}
		}
		if pa := a.PodAffinity; pa != nil {
			var err error
			pi.RequiredAffinityTerms, err = affinityTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			collect(err)
			pi.PreferredAffinityTerms, err = weightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution)
			collect(err)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			var err error
			pi.RequiredAntiAffinityTerms, err = affinityTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution)
			collect(err)
			pi.PreferredAntiAffinityTerms, err = weightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution)
			collect(err)
		}
		if len(errs) > 0 {
			pi.ParseErr = errs[0]
		}
	}
	return pi
}

// WithPod returns a copy of pi describing pod, which must differ from
// pi.Pod only in fields PodInfo does not derive (spec.nodeName, status).
func (pi *PodInfo) WithPod(pod *v1.Pod) *PodInfo {
	c := *pi
	c.Pod = pod
	return &c
}

// HasNodeAffinity reports whether the pod restricts its nodes by a node
// selector or required node affinity.
func (pi *PodInfo) HasNodeAffinity() bool {
	spec := &pi.Pod.Spec
	return len(spec.NodeSelector) > 0 || (spec.Affinity != nil && spec.Affinity.NodeAffinity != nil &&
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
}

// HasAffinity reports whether the pod has any pod affinity or
// anti-affinity term, required or preferred.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinityTerms) > 0 || len(pi.RequiredAntiAffinityTerms) > 0 ||
		len(pi.PreferredAffinityTerms) > 0 || len(pi.PreferredAntiAffinityTerms) > 0
}

func affinityTerms(pod *v1.Pod, terms []v1.PodAffinityTerm) ([]AffinityTerm, error) {
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func weightedTerms(pod *v1.Pod, terms []v1.WeightedPodAffinityTerm) ([]WeightedAffinityTerm, error) {
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			return nil, err
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out, nil
}

func newAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := NewSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("framework: pod %s/%s: affinity term label selector: %w", pod.Namespace, pod.Name, err)
	}
	if sel, err = sel.WithLabelKeys(pod, term.MatchLabelKeys, selection.In); err != nil {
		return AffinityTerm{}, err
	}
	if sel, err = sel.WithLabelKeys(pod, term.MismatchLabelKeys, selection.NotIn); err != nil {
		return AffinityTerm{}, err
	}
	t := AffinityTerm{Selector: sel, TopologyKey: term.TopologyKey, Namespaces: sets.New(term.Namespaces...)}
	if term.NamespaceSelector != nil {
		t.NamespaceSelector, err = metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return AffinityTerm{}, fmt.Errorf("framework: pod %s/%s: affinity term namespace selector: %w", pod.Namespace, pod.Name, err)
		}
	} else if len(term.Namespaces) == 0 {
		t.Namespaces.Insert(pod.Namespace)
	}
	if t.NamespaceSelector == nil && t.Namespaces.Len() == 1 {
		t.onlyNamespace = t.Namespaces.UnsortedList()[0]
	}
	return t, nil
}

// QueuedPodInfo is a pod waiting in the scheduling queue, with its
// queueing history.
type QueuedPodInfo struct {
	*PodInfo
	// Timestamp is when the pod last entered the queue (a failure time for
	// backoff).
	Timestamp time.Time
	// Added is when the scheduler first saw the pod, for the end-to-end
	// latency metric.
	Added time.Time
	// Attempts counts scheduling attempts; it drives the backoff.
	Attempts int
	// UnschedulablePlugins are the plugins that rejected the pod in its
	// last attempt; only events they care about move it back to active.
	UnschedulablePlugins sets.Set[string]
}
