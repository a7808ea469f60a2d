package defaultpreemption_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
	"cairn/scheduler/plugins/defaultpreemption"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func victim(name, node string, priority int32, cpu string, started time.Duration) *v1.Pod {
	return st.MakePod().Name(name).Node(node).Priority(priority).Req(st.Res{"cpu": cpu}).StartTime(t0.Add(started)).Obj()
}

func TestPreemption(t *testing.T) {
	unsched := func(reason string) *framework.Status { return framework.NewStatus(framework.Unschedulable, reason) }
	tests := []struct {
		name      string
		nodes     []*v1.Node
		pods      []*v1.Pod
		preemptor *v1.Pod
		statuses  map[string]*framework.Status
		nominated string
		deleted   []string
		msg       string
	}{
		{
			name:  "the node whose victims matter least",
			nodes: []*v1.Node{st.MakeNode().Name("n").Capacity(st.Res{"cpu": "2"}).Obj(), st.MakeNode().Name("m").Capacity(st.Res{"cpu": "2"}).Obj()},
			pods: []*v1.Pod{
				victim("low", "n", 1, "1", 0), victim("mid", "n", 2, "1", 0),
				victim("a", "m", 5, "1", 0), victim("b", "m", 5, "1", 0),
			},
			preemptor: st.MakePod().Name("p").Priority(10).Req(st.Res{"cpu": "1"}).Obj(),
			statuses:  map[string]*framework.Status{"n": unsched("Insufficient cpu"), "m": unsched("Insufficient cpu")},
			nominated: "n",
			deleted:   []string{"low"},
		},
		{
			name:  "only as many victims as needed, the most recently started",
			nodes: []*v1.Node{st.MakeNode().Name("n").Capacity(st.Res{"cpu": "3"}).Obj()},
			pods: []*v1.Pod{
				victim("old", "n", 1, "1", 0), victim("newer", "n", 1, "1", time.Hour), victim("newest", "n", 1, "1", 2*time.Hour),
			},
			preemptor: st.MakePod().Name("p").Priority(10).Req(st.Res{"cpu": "2"}).Obj(),
			statuses:  map[string]*framework.Status{"n": unsched("Insufficient cpu")},
			nominated: "n",
			deleted:   []string{"newer", "newest"},
		},
		{
			name:      "preemptionPolicy Never",
			nodes:     []*v1.Node{st.MakeNode().Name("n").Capacity(st.Res{"cpu": "1"}).Obj()},
			pods:      []*v1.Pod{victim("low", "n", 1, "1", 0)},
			preemptor: st.MakePod().Name("p").Priority(10).PreemptNever().Req(st.Res{"cpu": "1"}).Obj(),
			statuses:  map[string]*framework.Status{"n": unsched("Insufficient cpu")},
			msg:       "preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name:      "nothing of lower priority",
			nodes:     []*v1.Node{st.MakeNode().Name("n").Capacity(st.Res{"cpu": "1"}).Obj(), st.MakeNode().Name("tainted").Obj()},
			pods:      []*v1.Pod{victim("peer", "n", 10, "1", 0)},
			preemptor: st.MakePod().Name("p").Priority(10).Req(st.Res{"cpu": "1"}).Obj(),
			statuses: map[string]*framework.Status{"n": unsched("Insufficient cpu"),
				"tainted": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {a: b}")},
			msg: "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
		},
		{
			name:      "evicting everything would not be enough",
			nodes:     []*v1.Node{st.MakeNode().Name("n").Capacity(st.Res{"cpu": "1"}).Obj()},
			pods:      []*v1.Pod{victim("low", "n", 1, "1", 0)},
			preemptor: st.MakePod().Name("p").Priority(10).Req(st.Res{"cpu": "2"}).Obj(),
			statuses:  map[string]*framework.Status{"n": unsched("Insufficient cpu")},
			msg:       "preemption: 0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name:      "victims still terminating on the nominated node",
			nodes:     []*v1.Node{st.MakeNode().Name("n").Capacity(st.Res{"cpu": "1"}).Obj()},
			pods:      []*v1.Pod{st.MakePod().Name("low").Node("n").Priority(1).Req(st.Res{"cpu": "1"}).Terminating().Obj()},
			preemptor: st.MakePod().Name("p").Priority(10).NominatedNode("n").Req(st.Res{"cpu": "1"}).Obj(),
			statuses:  map[string]*framework.Status{"n": unsched("Insufficient cpu")},
			msg:       "preemption: not eligible due to a terminating pod on the nominated node.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := make([]runtime.Object, len(tt.pods))
			for i, p := range tt.pods {
				objs[i] = p
			}
			cs := fake.NewClientset(objs...)
			c := st.NewCluster(t, tt.pods, tt.nodes, st.WithClientSet(cs))
			pl := c.Plugin(t, defaultpreemption.New).(framework.PostFilterPlugin)
			pod := framework.NewPodInfo(tt.preemptor)
			state := framework.NewCycleState()
			if _, s := c.Framework.RunPreFilterPlugins(context.Background(), state, pod); !s.IsSuccess() {
				t.Fatal(s.AsError())
			}
			statuses := framework.NewNodeToStatus(nil)
			for n, s := range tt.statuses {
				statuses.Set(n, s)
			}
			res, s := pl.PostFilter(context.Background(), state, pod, statuses)
			if s.Code() == framework.Error {
				t.Fatal(s.AsError())
			}
			if s.Message() != tt.msg {
				t.Errorf("message = %q\nwant      %q", s.Message(), tt.msg)
			}
			if got := ""; res != nil {
				got = res.NominatedNodeName
				if got != tt.nominated {
					t.Errorf("nominated %q, want %q", got, tt.nominated)
				}
			} else if tt.nominated != "" {
				t.Errorf("no nomination, want %q", tt.nominated)
			}
			var deleted []string
			for _, a := range cs.Actions() {
				if d, ok := a.(clienttesting.DeleteAction); ok {
					deleted = append(deleted, d.GetName())
				}
			}
			slices.Sort(deleted)
			if !slices.Equal(deleted, tt.deleted) {
				t.Errorf("deleted %v, want %v", deleted, tt.deleted)
			}
		})
	}
}

func TestVictimsAreMarkedAsPreempted(t *testing.T) {
	low := victim("low", "n", 1, "1", 0)
	cs := fake.NewClientset(low)
	c := st.NewCluster(t, []*v1.Pod{low}, []*v1.Node{st.MakeNode().Name("n").Capacity(st.Res{"cpu": "1"}).Obj()}, st.WithClientSet(cs))
	pl := c.Plugin(t, defaultpreemption.New).(framework.PostFilterPlugin)
	pod := framework.NewPodInfo(st.MakePod().Name("p").Priority(10).Req(st.Res{"cpu": "1"}).Obj())
	state := framework.NewCycleState()
	c.Framework.RunPreFilterPlugins(context.Background(), state, pod)
	statuses := framework.NewNodeToStatus(nil)
	statuses.Set("n", framework.NewStatus(framework.Unschedulable, "Insufficient cpu"))
	if _, s := pl.PostFilter(context.Background(), state, pod, statuses); !s.IsSuccess() {
		t.Fatal(s.Message())
	}
	var patched bool
	for _, a := range cs.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetSubresource() == "status" && p.GetName() == "low" {
			patched = true
		}
	}
	if !patched {
		t.Error("victim got no DisruptionTarget condition")
	}
}
