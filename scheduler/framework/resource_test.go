package framework_test

import (
	"testing"

	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"
)

func TestPodRequestsFollowTheKubeletsInitContainerRules(t *testing.T) {
	tests := []struct {
		name     string
		pod      *st.PodWrapper
		cpu, mem int64
		gpu      int64
	}{
		{"containers add up", st.MakePod().Req(st.Res{"cpu": "1", "memory": "1Gi"}).Container(st.Res{"cpu": "500m"}), 1500, 1 << 30, 0},
		{"a larger init container wins", st.MakePod().Req(st.Res{"cpu": "1"}).InitReq(st.Res{"cpu": "3"}), 3000, 0, 0},
		{"a smaller init container does not count", st.MakePod().Req(st.Res{"cpu": "2"}).InitReq(st.Res{"cpu": "1"}), 2000, 0, 0},
		{"sidecars run alongside the containers", st.MakePod().Req(st.Res{"cpu": "1"}).SidecarReq(st.Res{"cpu": "500m"}), 1500, 0, 0},
		{"init after a sidecar runs with it", st.MakePod().Req(st.Res{"cpu": "100m"}).SidecarReq(st.Res{"cpu": "1"}).InitReq(st.Res{"cpu": "2"}), 3000, 0, 0},
		{"init before a sidecar runs alone", st.MakePod().Req(st.Res{"cpu": "1"}).InitReq(st.Res{"cpu": "2"}).SidecarReq(st.Res{"cpu": "1"}), 2000, 0, 0},
		{"overhead is added", st.MakePod().Req(st.Res{"cpu": "1"}).Overhead(st.Res{"cpu": "250m", "memory": "1Mi"}), 1250, 1 << 20, 0},
		{"extended resources", st.MakePod().Req(st.Res{"nvidia.com/gpu": "2"}), 0, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := framework.PodRequests(tt.pod.Obj())
			if r.MilliCPU != tt.cpu || r.Memory != tt.mem || r.Scalar["nvidia.com/gpu"] != tt.gpu {
				t.Errorf("requests = cpu %d mem %d gpu %d, want %d %d %d", r.MilliCPU, r.Memory, r.Scalar["nvidia.com/gpu"], tt.cpu, tt.mem, tt.gpu)
			}
		})
	}
}

func TestNonZeroRequestsDefaultUnsetCPUAndMemory(t *testing.T) {
	r := framework.PodNonZeroRequests(st.MakePod().Container(st.Res{"cpu": "1"}).Obj())
	if want := framework.DefaultMilliCPURequest + 1000; r.MilliCPU != want {
		t.Errorf("cpu = %d, want %d", r.MilliCPU, want)
	}
	if want := 2 * framework.DefaultMemoryRequest; r.Memory != want {
		t.Errorf("memory = %d, want %d", r.Memory, want)
	}
}
