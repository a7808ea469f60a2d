package framework_test

import (
	"testing"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"

	v1 "k8s.io/api/core/v1"
)

func TestNodeInfoKeepsSumsAcrossAddAndRemove(t *testing.T) {
	node := st.MakeNode().Name("n").Capacity(st.Res{"cpu": "4", "memory": "8Gi"}).Obj()
	a := framework.NewPodInfo(st.MakePod().Name("a").Req(st.Res{"cpu": "1"}).HostPort(80).Obj())
	b := framework.NewPodInfo(st.MakePod().Name("b").Req(st.Res{"cpu": "2", "memory": "1Gi"}).
		PodAntiAffinity(v1.LabelHostname, map[string]string{"x": "y"}).Obj())
	ni := framework.NewNodeInfo(node, a, b)
	if ni.Requested.MilliCPU != 3000 || ni.Requested.Memory != 1<<30 {
		t.Fatalf("requested = %+v", ni.Requested)
	}
	if len(ni.PodsWithAffinity) != 1 || len(ni.PodsWithRequiredAntiAffinity) != 1 {
		t.Fatalf("affinity lists = %d %d", len(ni.PodsWithAffinity), len(ni.PodsWithRequiredAntiAffinity))
	}
	if !ni.UsedPorts.Conflicts("", v1.ProtocolTCP, 80) {
		t.Fatal("port 80 not in use")
	}
	clone := ni.Clone()
	if err := ni.RemovePod(b.Pod); err != nil {
		t.Fatal(err)
	}
	if ni.Requested.MilliCPU != 1000 || len(ni.PodsWithAffinity) != 0 || len(ni.Pods) != 1 {
		t.Fatalf("after remove: %+v, %d pods", ni.Requested, len(ni.Pods))
	}
	if clone.Requested.MilliCPU != 3000 || len(clone.Pods) != 2 {
		t.Fatal("clone changed with the original")
	}
	if err := ni.RemovePod(b.Pod); err == nil {
		t.Fatal("removing an absent pod succeeded")
	}
}

func TestHostPortConflicts(t *testing.T) {
	tests := []struct {
		name     string
		usedIP   string
		usedProt v1.Protocol
		ip       string
		prot     v1.Protocol
		want     bool
	}{
		{"same address", "10.0.0.1", v1.ProtocolTCP, "10.0.0.1", v1.ProtocolTCP, true},
		{"other address", "10.0.0.1", v1.ProtocolTCP, "10.0.0.2", v1.ProtocolTCP, false},
		{"used on all addresses", "", v1.ProtocolTCP, "10.0.0.2", v1.ProtocolTCP, true},
		{"wanted on all addresses", "10.0.0.1", v1.ProtocolTCP, "0.0.0.0", v1.ProtocolTCP, true},
		{"other protocol", "", v1.ProtocolTCP, "", v1.ProtocolUDP, false},
		{"empty protocol is TCP", "", "", "", v1.ProtocolTCP, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h framework.HostPortInfo
			h.Add(tt.usedIP, tt.usedProt, 8080)
			if got := h.Conflicts(tt.ip, tt.prot, 8080); got != tt.want {
				t.Errorf("Conflicts = %v, want %v", got, tt.want)
			}
			if h.Conflicts(tt.ip, tt.prot, 8081) {
				t.Error("another port conflicts")
			}
		})
	}
}
