package endpointslice

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func nodeLister(nodes ...*corev1.Node) corelisters.NodeLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		_ = idx.Add(n)
	}
	return corelisters.NewNodeLister(idx)
}

// stored turns a plan's creations and updates into the slices the API
// would then hold, named s0, s1... for creations.
func stored(existing []*discoveryv1.EndpointSlice, p plan) []*discoveryv1.EndpointSlice {
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		byName[s.Name] = s
	}
	for _, s := range p.updates {
		byName[s.Name] = s
	}
	for _, s := range p.deletes {
		delete(byName, s.Name)
	}
	for i, s := range p.creates {
		s = s.DeepCopy()
		s.Name = fmt.Sprintf("%s%d", s.GenerateName, len(byName)+i)
		byName[s.Name] = s
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	return out
}

func planFor(svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, max int) plan {
	r := &reconciler{svc: svc, max: max}
	return r.plan(existing, desiredGroups(svc, pods, nodeLister()))
}

func endpointCount(slices []*discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range slices {
		n += len(s.Endpoints)
	}
	return n
}

func TestPlanSizesAndChurn(t *testing.T) {
	svc := testService(namedPort("http", "http"))
	for _, tc := range []struct {
		name                      string
		before, after             []*corev1.Pod
		max                       int
		creates, updates, deletes int
		slices                    int
	}{
		{"first sync, one slice", nil, readyPods(3), 100, 1, 0, 0, 1},
		{"250 endpoints in slices of 100", nil, readyPods(250), 100, 3, 0, 0, 3},
		{"nothing changed, nothing written", readyPods(250), readyPods(250), 100, 0, 0, 0, 3},
		{"one pod less rewrites one slice", readyPods(250), readyPods(250)[1:], 100, 0, 1, 0, 3},
		{"a few more fill a slice with room", readyPods(250), readyPods(260), 100, 0, 1, 0, 3},
		{"no pods leaves a placeholder", readyPods(3), nil, 100, 0, 1, 0, 1},
		{"no pods ever gives a placeholder", nil, nil, 100, 1, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var existing []*discoveryv1.EndpointSlice
			if tc.before != nil {
				existing = stored(nil, planFor(svc, tc.before, nil, tc.max))
			}
			p := planFor(svc, tc.after, existing, tc.max)
			if len(p.creates) != tc.creates || len(p.updates) != tc.updates || len(p.deletes) != tc.deletes {
				t.Errorf("plan creates %d updates %d deletes %d, want %d %d %d",
					len(p.creates), len(p.updates), len(p.deletes), tc.creates, tc.updates, tc.deletes)
			}
			after := stored(existing, p)
			if len(after) != tc.slices {
				t.Errorf("%d slices, want %d", len(after), tc.slices)
			}
			if got := endpointCount(after); got != len(tc.after) {
				t.Errorf("%d endpoints, want %d", got, len(tc.after))
			}
			for _, s := range after {
				if len(s.Endpoints) > tc.max {
					t.Errorf("slice %s holds %d endpoints, more than %d", s.Name, len(s.Endpoints), tc.max)
				}
				if s.Labels[discoveryv1.LabelServiceName] != "web" || s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels["team"] != "a" {
					t.Errorf("slice %s labels %v", s.Name, s.Labels)
				}
				if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID {
					t.Errorf("slice %s owners %v", s.Name, s.OwnerReferences)
				}
			}
			// Applying the plan converges: a second plan writes nothing.
			if again := planFor(svc, tc.after, after, tc.max); len(again.creates)+len(again.updates)+len(again.deletes) > 0 {
				t.Errorf("second plan not empty: %+v", again)
			}
		})
	}
}

func TestEndpointConditionsAndPorts(t *testing.T) {
	svc := testService(namedPort("http", "web"), corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP})
	zoned := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "z1"}}}
	pods := []*corev1.Pod{
		testPod("ready").ip("10.0.0.1").ready().port("web", 8080).node("n1").Pod,
		testPod("unready").ip("10.0.0.2").port("web", 8080).Pod,
		testPod("terminating").ip("10.0.0.3").ready().port("web", 8080).terminating().Pod,
		testPod("other-port").ip("10.0.0.4").ready().port("web", 9999).Pod,
		testPod("no-ip").ready().port("web", 8080).Pod,
		testPod("failed").ip("10.0.0.5").port("web", 8080).phase(corev1.PodFailed).Pod,
		testPod("no-named-port").ip("10.0.0.6").ready().Pod,
	}
	groups := desiredGroups(svc, pods, nodeLister(zoned))
	type want struct {
		ready, serving, terminating bool
		zone                        string
		ports                       string
	}
	wants := map[string]want{
		"10.0.0.1": {true, true, false, "z1", "http/TCP/8080,metrics/TCP/9090"},
		"10.0.0.2": {false, false, false, "", "http/TCP/8080,metrics/TCP/9090"},
		"10.0.0.3": {false, true, true, "", "http/TCP/8080,metrics/TCP/9090"},
		"10.0.0.4": {true, true, false, "", "http/TCP/9999,metrics/TCP/9090"},
		"10.0.0.6": {true, true, false, "", "metrics/TCP/9090"},
	}
	seen := 0
	for _, g := range groups {
		ports := ""
		for i, p := range g.ports {
			if i > 0 {
				ports += ","
			}
			ports += fmt.Sprintf("%s/%s/%d", *p.Name, *p.Protocol, *p.Port)
		}
		for addr, ep := range g.endpoints {
			seen++
			w, ok := wants[addr]
			if !ok {
				t.Errorf("unexpected endpoint %s", addr)
				continue
			}
			c := ep.Conditions
			if *c.Ready != w.ready || *c.Serving != w.serving || *c.Terminating != w.terminating {
				t.Errorf("%s: ready %v serving %v terminating %v, want %+v", addr, *c.Ready, *c.Serving, *c.Terminating, w)
			}
			if ptr.Deref(ep.Zone, "") != w.zone {
				t.Errorf("%s: zone %q, want %q", addr, ptr.Deref(ep.Zone, ""), w.zone)
			}
			if ports != w.ports {
				t.Errorf("%s: ports %s, want %s", addr, ports, w.ports)
			}
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.UID == "" {
				t.Errorf("%s: targetRef %v", addr, ep.TargetRef)
			}
		}
	}
	if seen != len(wants) {
		t.Errorf("%d endpoints, want %d", seen, len(wants))
	}
	if len(groups) != 3 {
		t.Errorf("%d groups, want 3 (one per distinct port set)", len(groups))
	}
}

func TestPublishNotReadyAddressesMakesEveryPodReady(t *testing.T) {
	svc := testService(namedPort("http", "web"))
	svc.Spec.PublishNotReadyAddresses = true
	groups := desiredGroups(svc, []*corev1.Pod{testPod("a").ip("10.0.0.1").port("web", 80).terminating().Pod}, nodeLister())
	for _, g := range groups {
		for _, ep := range g.endpoints {
			if !*ep.Conditions.Ready || !*ep.Conditions.Serving || !*ep.Conditions.Terminating {
				t.Errorf("conditions %+v", ep.Conditions)
			}
		}
	}
}
