package scheduler

import (
	"context"
	"fmt"
	"testing"

	"cairn/scheduler/config"
	"cairn/scheduler/framework"
	st "cairn/scheduler/internal/schedtest"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkSchedulingCycle measures one cycle (snapshot, filter, score,
// assume) on 5000 nodes, without the API: the scheduler's own share of
// the per-pod cost.
func BenchmarkSchedulingCycle(b *testing.B) {
	for _, wl := range []struct {
		name string
		pod  func(i int) *v1.Pod
	}{
		{"basic", func(i int) *v1.Pod {
			return st.MakePod().Name(fmt.Sprintf("p%d", i)).Req(st.Res{"cpu": "100m", "memory": "100Mi"}).Obj()
		}},
		{"spread-affinity", func(i int) *v1.Pod {
			app := map[string]string{"app": fmt.Sprint(i % 50)}
			return st.MakePod().Name(fmt.Sprintf("p%d", i)).Label("app", app["app"]).Req(st.Res{"cpu": "100m", "memory": "100Mi"}).
				Spread(1, v1.LabelTopologyZone, v1.DoNotSchedule, app).
				PreferredPodAntiAffinity(10, v1.LabelHostname, app).Obj()
		}},
	} {
		b.Run(wl.name, func(b *testing.B) {
			s := newTestScheduler(b, 0, "")
			for i := range 5000 {
				s.cache.AddNode(st.MakeNode().Name(fmt.Sprintf("n%04d", i)).Label(v1.LabelTopologyZone, fmt.Sprintf("z%d", i%10)).
					Capacity(st.Res{"cpu": "32", "memory": "128Gi", "pods": "500"}).Obj())
			}
			fwk := s.profiles[config.DefaultSchedulerName].fwk
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pi := framework.NewPodInfo(wl.pod(i))
				s.cache.UpdateSnapshot(s.snapshot)
				host, err := s.schedulePod(ctx, fwk, framework.NewCycleState(), pi)
				if err != nil {
					b.Fatal(err)
				}
				p := *pi.Pod
				p.Spec.NodeName = host
				if err := s.cache.AssumePod(pi.WithPod(&p)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
