package kubelet

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"cairn/node/kubelet/prober"

	corev1 "k8s.io/api/core/v1"
)

type planSummary struct {
	Start       []string // name:restartCount
	Kill        []string
	Remove      []string
	Waiting     []string // name:reason
	Initialized bool
	Terminal    bool
}

func summarize(p plan) planSummary {
	var s planSummary
	for _, r := range p.Start {
		s.Start = append(s.Start, r.Container.Name+":"+itoa(r.RestartCount))
	}
	for _, k := range p.Kill {
		s.Kill = append(s.Kill, k.Container.Name)
	}
	s.Remove = p.Remove
	for n, w := range p.Waiting {
		s.Waiting = append(s.Waiting, n+":"+w.Reason)
	}
	sort.Strings(s.Waiting)
	s.Initialized, s.Terminal = p.Initialized, p.Terminal
	return s
}

func itoa(n int32) string { return string(rune('0' + n)) }

func TestPlanPod(t *testing.T) {
	now := epoch.Add(time.Minute)
	tests := []struct {
		name      string
		pod       *corev1.Pod
		views     map[string]containerView
		unhealthy string // container failing liveness
		backoff   bool   // the containers already restarted once
		want      planSummary
	}{
		{
			name: "new pod starts its containers",
			pod:  testPod("p").Container("a", "b").Build(),
			want: planSummary{Start: []string{"a:0", "b:0"}, Initialized: true},
		},
		{
			name: "first init container first",
			pod:  testPod("p").Init("i1", "i2").Container("a").Build(),
			want: planSummary{Start: []string{"i1:0"}},
		},
		{
			name:  "a running init container blocks the next",
			pod:   testPod("p").Init("i1", "i2").Container("a").Build(),
			views: views("i1", running("x", 0)),
			want:  planSummary{},
		},
		{
			name:  "next init container once the first succeeded",
			pod:   testPod("p").Init("i1", "i2").Container("a").Build(),
			views: views("i1", exited("x", 0, 0, time.Second)),
			want:  planSummary{Start: []string{"i2:0"}},
		},
		{
			name:  "containers once init is done",
			pod:   testPod("p").Init("i1").Container("a").Build(),
			views: views("i1", exited("x", 0, 0, time.Second)),
			want:  planSummary{Start: []string{"a:0"}, Initialized: true},
		},
		{
			name:  "a failed init container restarts",
			pod:   testPod("p").Init("i1").Container("a").Build(),
			views: views("i1", exited("x", 0, 1, time.Second)),
			want:  planSummary{Start: []string{"i1:1"}},
		},
		{
			name:  "a failed init container fails a Never pod",
			pod:   testPod("p").Init("i1").Container("a").Restart(corev1.RestartPolicyNever).Build(),
			views: views("i1", exited("x", 0, 1, time.Second)),
			want:  planSummary{Terminal: true},
		},
		{
			name:  "init is not run again once a container ran",
			pod:   testPod("p").Init("i1").Container("a").Build(),
			views: views("a", running("y", 0)),
			want:  planSummary{Initialized: true},
		},
		{
			name:  "a sidecar must start before the next init container",
			pod:   testPod("p").Sidecar("s").Init("i1").Container("a").Build(),
			views: views("s", running("s1", 0)),
			want:  planSummary{Start: []string{"i1:0"}},
		},
		{
			name:      "liveness failure kills",
			pod:       testPod("p").Container("a", "b").Build(),
			views:     views("a", running("x", 0), "b", running("y", 0)),
			unhealthy: "a",
			want:      planSummary{Kill: []string{"a"}, Initialized: true},
		},
		{
			name:  "first restart is immediate",
			pod:   testPod("p").Container("a").Build(),
			views: views("a", exited("x", 0, 1, 50*time.Second)),
			want:  planSummary{Start: []string{"a:1"}, Initialized: true},
		},
		{
			name:    "later restarts back off",
			pod:     testPod("p").Container("a").Build(),
			views:   views("a", exited("x", 1, 1, 55*time.Second)),
			backoff: true,
			want:    planSummary{Waiting: []string{"a:CrashLoopBackOff"}, Initialized: true},
		},
		{
			name:    "restart once the backoff is over",
			pod:     testPod("p").Container("a").Build(),
			views:   views("a", exited("x", 1, 1, 30*time.Second)),
			backoff: true,
			want:    planSummary{Start: []string{"a:2"}, Initialized: true},
		},
		{
			name:  "OnFailure does not restart a success",
			pod:   testPod("p").Container("a", "b").Restart(corev1.RestartPolicyOnFailure).Build(),
			views: views("a", exited("x", 0, 0, time.Second), "b", running("y", 0)),
			want:  planSummary{Initialized: true},
		},
		{
			name:  "all done under OnFailure",
			pod:   testPod("p").Container("a").Restart(corev1.RestartPolicyOnFailure).Build(),
			views: views("a", exited("x", 0, 0, time.Second)),
			want:  planSummary{Initialized: true, Terminal: true},
		},
		{
			name:  "Never leaves a failure alone",
			pod:   testPod("p").Container("a").Restart(corev1.RestartPolicyNever).Build(),
			views: views("a", exited("x", 0, 2, time.Second)),
			want:  planSummary{Initialized: true, Terminal: true},
		},
		{
			name:  "a sidecar is not restarted once the pod ended",
			pod:   testPod("p").Sidecar("s").Container("a").Restart(corev1.RestartPolicyNever).Build(),
			views: views("s", exited("s1", 0, 1, time.Second), "a", exited("x", 0, 0, time.Second)),
			want:  planSummary{Initialized: true, Terminal: true},
		},
		{
			name:  "a sidecar restarts while the pod runs",
			pod:   testPod("p").Sidecar("s").Container("a").Build(),
			views: views("s", exited("s1", 0, 1, time.Second), "a", running("x", 0)),
			want:  planSummary{Start: []string{"s:1"}, Initialized: true},
		},
		{
			name: "a new image replaces a running instance",
			pod:  testPod("p").Container("a").Restart(corev1.RestartPolicyNever).Build(),
			views: views("a", &instance{ID: "x", RestartCount: 0, State: stateRunning,
				Hash: containerHash(&corev1.Container{Image: "old"})}),
			want: planSummary{Kill: []string{"a"}, Start: []string{"a:1"}, Initialized: true},
		},
		{
			name:  "the same image keeps it",
			pod:   testPod("p").Container("a").Build(),
			views: views("a", &instance{ID: "x", State: stateRunning, Hash: containerHash(&corev1.Container{Image: "img"})}),
			want:  planSummary{Initialized: true},
		},
		{
			name: "an ephemeral container starts even during init",
			pod:  testPod("p").Init("i1").Container("a").Ephemeral("debug", "").Build(),
			want: planSummary{Start: []string{"i1:0", "debug:0"}},
		},
		{
			name:  "an ephemeral container runs once, whatever the restart policy",
			pod:   testPod("p").Container("a").Ephemeral("debug", "a").Build(),
			views: views("a", running("x", 0), "debug", exited("d", 0, 1, time.Second)),
			want:  planSummary{Initialized: true},
		},
		{
			name:  "an ephemeral container that never started is not tried again",
			pod:   testPod("p").Container("a").Ephemeral("debug", "a").Build(),
			views: views("a", running("x", 0), "debug", &instance{ID: "d", State: stateCreated}),
			want:  planSummary{Initialized: true},
		},
		{
			name:  "a pod ends with its ephemeral container still running",
			pod:   testPod("p").Container("a").Ephemeral("debug", "").Restart(corev1.RestartPolicyNever).Build(),
			views: views("a", exited("x", 0, 0, time.Second), "debug", running("d", 0)),
			want:  planSummary{Initialized: true, Terminal: true},
		},
		{
			name:  "no ephemeral container starts in an ended pod",
			pod:   testPod("p").Container("a").Ephemeral("debug", "").Restart(corev1.RestartPolicyNever).Build(),
			views: views("a", exited("x", 0, 0, time.Second)),
			want:  planSummary{Initialized: true, Terminal: true},
		},
		{
			name:  "a never started instance is replaced",
			pod:   testPod("p").Container("a").Build(),
			views: views("a", &instance{ID: "x", RestartCount: 3, State: stateCreated}),
			want:  planSummary{Start: []string{"a:3"}, Remove: []string{"x"}, Initialized: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBackoff(10*time.Second, 5*time.Minute, 10*time.Minute)
			if tt.backoff {
				for _, c := range tt.pod.Spec.Containers {
					b.Next(backoffKey(tt.pod.UID, c.Name), 0)
				}
			}
			p := planPod(planInput{
				Pod: tt.pod, Views: tt.views, Backoff: b, Now: now,
				Unhealthy: func(c *corev1.Container, id string) (prober.Kind, bool) {
					return prober.Liveness, c.Name == tt.unhealthy
				},
				Started: func(*corev1.Container, string) bool { return true },
			})
			if got := summarize(p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if len(p.Waiting) > 0 && p.Requeue <= 0 {
				t.Error("a backoff without a requeue")
			}
		})
	}
}
