package statefulset_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/controllers/internal/podutil"
	"cairn/controllers/internal/workloadtest"
	"cairn/controllers/statefulset"
	"cairn/internal/testcluster"
	"cairn/internal/testkubelet"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/utils/ptr"
)

// podLog records pod arrivals and departures in the order a watch sees
// them, and whether each arrival's predecessor was ready by then.
type podLog struct {
	mu     sync.Mutex
	ready  map[string]bool
	live   map[string]*corev1.Pod
	events []string
	early  []string // pods created before their predecessor was ready
}

func logPods(t *testing.T, client kubernetes.Interface, ns string) *podLog {
	l := &podLog{ready: map[string]bool{}, live: map[string]*corev1.Pod{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p := obj.(*corev1.Pod)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.events = append(l.events, "+"+p.Name)
			var i int
			if _, err := fmt.Sscanf(p.Name, "db-%d", &i); err == nil && i > 0 && !l.ready[fmt.Sprintf("db-%d", i-1)] {
				l.early = append(l.early, p.Name)
			}
			l.live[p.Name] = p
			l.ready[p.Name] = podutil.IsReady(p)
		},
		UpdateFunc: func(_, cur any) {
			p := cur.(*corev1.Pod)
			l.mu.Lock()
			l.live[p.Name] = p
			l.ready[p.Name] = podutil.IsReady(p) && p.DeletionTimestamp == nil
			l.mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			p := obj.(*corev1.Pod)
			l.mu.Lock()
			l.events = append(l.events, "-"+p.Name)
			delete(l.live, p.Name)
			l.ready[p.Name] = false
			l.mu.Unlock()
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return l
}

func (l *podLog) take() (events, early []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	events, early = l.events, l.early
	l.events, l.early = nil, nil
	return events, early
}

func (l *podLog) images() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for n, p := range l.live {
		if p.DeletionTimestamp == nil {
			out[n] = p.Spec.Containers[0].Image
		}
	}
	return out
}

func dbSet(ns string, replicas int32) *appsv1.StatefulSet {
	lbl := map[string]string{"app": "db"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: mustQuantity("1Gi")}}},
			}},
		},
	}
}

func waitRolledOut(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	viewer := &polymorphichelpers.StatefulSetStatusViewer{}
	workloadtest.Eventually(t, 30*time.Second, "kubectl rollout status statefulset/db", func() (bool, string) {
		s, err := client.AppsV1().StatefulSets(ns).Get(context.Background(), "db", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
		if err != nil {
			return false, err.Error()
		}
		msg, done, err := viewer.Status(&unstructured.Unstructured{Object: u}, 0)
		if err != nil {
			return false, err.Error()
		}
		return done && s.Status.CurrentRevision == s.Status.UpdateRevision, fmt.Sprintf("%s (status %+v)", strings.TrimSpace(msg), s.Status)
	})
}

func update(t *testing.T, client kubernetes.Interface, ns string, change func(*appsv1.StatefulSet)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := client.AppsV1().StatefulSets(ns).Get(context.Background(), "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(s)
		_, err = client.AppsV1().StatefulSets(ns).Update(context.Background(), s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOrderedPodsComeUpInOrderUpdateFromTheTopAndGoInReverse(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ns := workloadtest.Namespace(t, client, "ordered")
	if _, err := testkubelet.Start(t.Context(), client, testkubelet.Options{Namespace: ns, ReadyAfter: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	workloadtest.RunManager(t, c.AdminConfig(0), statefulset.Descriptor())
	pods := logPods(t, client, ns)
	ctx := context.Background()

	if _, err := client.AppsV1().StatefulSets(ns).Create(ctx, dbSet(ns, 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns)
	events, early := pods.take()
	if fmt.Sprint(events) != "[+db-0 +db-1 +db-2]" || len(early) > 0 {
		t.Fatalf("pods came %v (created before their predecessor was ready: %v), want db-0, db-1, db-2 in turn", events, early)
	}
	for _, claim := range []string{"data-db-0", "data-db-1", "data-db-2"} {
		if _, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{}); err != nil {
			t.Fatalf("claim %s: %v", claim, err)
		}
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Hostname != "db-1" || p.Spec.Subdomain != "db" || p.Labels[appsv1.StatefulSetPodNameLabel] != "db-1" || p.Labels[appsv1.PodIndexLabel] != "1" {
		t.Fatalf("db-1 identity: hostname %q subdomain %q labels %v", p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
	}

	update(t, client, ns, func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "db:2" })
	waitRolledOut(t, client, ns)
	events, _ = pods.take()
	if fmt.Sprint(events) != "[-db-2 +db-2 -db-1 +db-1 -db-0 +db-0]" {
		t.Fatalf("rolling update went %v, want db-2, db-1, db-0 replaced in turn", events)
	}
	if got := pods.images(); fmt.Sprint(got) != "map[db-0:db:2 db-1:db:2 db-2:db:2]" {
		t.Fatalf("after the update: %v", got)
	}

	update(t, client, ns, func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](0) })
	workloadtest.Eventually(t, 30*time.Second, "scaled to zero", func() (bool, string) {
		got := pods.images()
		return len(got) == 0, fmt.Sprint(got)
	})
	time.Sleep(200 * time.Millisecond)
	if events, _ := pods.take(); fmt.Sprint(events) != "[-db-2 -db-1 -db-0]" {
		t.Fatalf("pods went %v, want db-2, db-1, db-0 in turn", events)
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
