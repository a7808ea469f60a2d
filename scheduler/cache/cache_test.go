package cache_test

import (
	"slices"
	"testing"

	"cairn/scheduler/cache"
	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"

	v1 "k8s.io/api/core/v1"
)

func node(name, zone string) *v1.Node {
	return st.MakeNode().Name(name).Label(v1.LabelTopologyZone, zone).Capacity(st.Res{"cpu": "4"}).Obj()
}

func cpuPod(name, nodeName, cpu string) *v1.Pod {
	return st.MakePod().Name(name).Node(nodeName).Req(st.Res{"cpu": cpu}).Obj()
}

func requested(t *testing.T, c *cache.Cache, name string) int64 {
	t.Helper()
	ni := c.NodeInfo(name)
	if ni == nil {
		t.Fatalf("no node %s", name)
	}
	return ni.Requested.MilliCPU
}

func TestAssumedPodsCountUntilConfirmedOrForgotten(t *testing.T) {
	c := cache.New()
	c.AddNode(node("n1", "a"))
	c.AddNode(node("n2", "a"))
	p := cpuPod("p", "n1", "1")
	if err := c.AssumePod(framework.NewPodInfo(p)); err != nil {
		t.Fatal(err)
	}
	if !c.IsAssumedPod(p) || requested(t, c, "n1") != 1000 {
		t.Fatal("assumed pod not counted")
	}
	if err := c.AssumePod(framework.NewPodInfo(p)); err == nil {
		t.Fatal("assumed twice")
	}

	t.Run("ForgetOnBindFailure", func(t *testing.T) {
		if err := c.ForgetPod(p); err != nil {
			t.Fatal(err)
		}
		if c.IsAssumedPod(p) || requested(t, c, "n1") != 0 || c.PodCount() != 0 {
			t.Fatal("forgotten pod still counted")
		}
	})
	t.Run("ConfirmedByTheInformer", func(t *testing.T) {
		if err := c.AssumePod(framework.NewPodInfo(p)); err != nil {
			t.Fatal(err)
		}
		if err := c.AddPod(p); err != nil {
			t.Fatal(err)
		}
		if c.IsAssumedPod(p) || requested(t, c, "n1") != 1000 || c.PodCount() != 1 {
			t.Fatal("confirmed pod not counted once")
		}
		if err := c.ForgetPod(p); err == nil {
			t.Fatal("forgot a bound pod")
		}
	})
	t.Run("BoundElsewhereBySomeoneElse", func(t *testing.T) {
		q := cpuPod("q", "n1", "500m")
		if err := c.AssumePod(framework.NewPodInfo(q)); err != nil {
			t.Fatal(err)
		}
		if err := c.AddPod(cpuPod("q", "n2", "500m")); err != nil {
			t.Fatal(err)
		}
		if requested(t, c, "n1") != 1000 || requested(t, c, "n2") != 500 {
			t.Fatalf("n1 %d n2 %d", requested(t, c, "n1"), requested(t, c, "n2"))
		}
	})
}

func TestPodsBeforeTheirNodeAndAfterIt(t *testing.T) {
	c := cache.New()
	if err := c.AddPod(cpuPod("early", "n1", "1")); err != nil {
		t.Fatal(err)
	}
	s := cache.NewEmptySnapshot()
	c.UpdateSnapshot(s)
	if s.NumNodes() != 0 {
		t.Fatal("a node without its object is in the snapshot")
	}
	c.AddNode(node("n1", "a"))
	c.UpdateSnapshot(s)
	if ni := s.Get("n1"); ni == nil || ni.Requested.MilliCPU != 1000 {
		t.Fatal("early pod not counted on its node")
	}
	c.RemoveNode(node("n1", "a"))
	c.UpdateSnapshot(s)
	if s.NumNodes() != 0 || s.Get("n1") != nil {
		t.Fatal("removed node still in the snapshot")
	}
	c.AddNode(node("n1", "a"))
	c.UpdateSnapshot(s)
	if ni := s.Get("n1"); ni == nil || ni.Requested.MilliCPU != 1000 {
		t.Fatal("pods lost when the node came back")
	}
	if err := c.RemovePod(cpuPod("early", "n1", "1")); err != nil {
		t.Fatal(err)
	}
	c.RemoveNode(node("n1", "a"))
	if c.NodeInfo("n1") != nil {
		t.Fatal("empty removed node kept")
	}
}

func TestSnapshotCopiesOnlyChangedNodes(t *testing.T) {
	c := cache.New()
	for _, n := range []string{"n1", "n2", "n3"} {
		c.AddNode(node(n, "a"))
	}
	s := cache.NewEmptySnapshot()
	c.UpdateSnapshot(s)
	before := map[string]*framework.NodeInfo{}
	for _, ni := range s.List() {
		before[ni.Node().Name] = ni
	}
	gen := map[string]int64{"n1": s.Get("n1").Generation, "n3": s.Get("n3").Generation}
	if err := c.AddPod(cpuPod("p", "n2", "1")); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if s.Get("n1").Generation != gen["n1"] || s.Get("n3").Generation != gen["n3"] {
		t.Error("unchanged nodes were copied again")
	}
	if s.Get("n2").Requested.MilliCPU != 1000 {
		t.Error("changed node not refreshed")
	}
	for _, ni := range s.List() {
		if before[ni.Node().Name] != ni {
			t.Error("list entries were replaced instead of updated in place")
		}
	}
	// The snapshot is a copy: the cache moving on does not change it.
	if err := c.AddPod(cpuPod("q", "n2", "1")); err != nil {
		t.Fatal(err)
	}
	if s.Get("n2").Requested.MilliCPU != 1000 {
		t.Error("snapshot changed without an update")
	}
}

func TestSnapshotTracksNodesWithAffinityPods(t *testing.T) {
	c := cache.New()
	c.AddNode(node("n1", "a"))
	c.AddNode(node("n2", "a"))
	s := cache.NewEmptySnapshot()
	c.UpdateSnapshot(s)
	anti := st.MakePod().Name("anti").Node("n2").PodAntiAffinity(v1.LabelHostname, map[string]string{"a": "b"}).Obj()
	if err := c.AddPod(anti); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if l := s.HavePodsWithRequiredAntiAffinityList(); len(l) != 1 || l[0].Node().Name != "n2" {
		t.Fatalf("anti-affinity list = %v", l)
	}
	if len(s.HavePodsWithAffinityList()) != 1 {
		t.Fatal("affinity list not updated")
	}
	if err := c.RemovePod(anti); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if len(s.HavePodsWithRequiredAntiAffinityList()) != 0 {
		t.Fatal("anti-affinity list kept a node without such pods")
	}
}

func TestNodesAreListedWithZonesInterleaved(t *testing.T) {
	c := cache.New()
	for _, n := range []struct{ name, zone string }{{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"b1", "b"}, {"c1", "c"}, {"c2", "c"}} {
		c.AddNode(node(n.name, n.zone))
	}
	s := cache.NewEmptySnapshot()
	c.UpdateSnapshot(s)
	var got []string
	for _, ni := range s.List() {
		got = append(got, ni.Node().Name)
	}
	if want := []string{"a1", "b1", "c1", "a2", "c2", "a3"}; !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	// Moving a node to another zone keeps it listed once.
	c.UpdateNode(nil, node("a1", "b"))
	c.UpdateSnapshot(s)
	if s.NumNodes() != 6 {
		t.Errorf("%d nodes after a zone change", s.NumNodes())
	}
}
