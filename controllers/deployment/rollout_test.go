package deployment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/controllers/deployment"
	"cairn/controllers/internal/controllerref"
	"cairn/controllers/internal/podutil"
	"cairn/controllers/internal/workloadtest"
	"cairn/controllers/replicaset"
	"cairn/internal/testcluster"
	"cairn/internal/testkubelet"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/utils/ptr"
)

func webDeployment(ns string, replicas int32, image string) *appsv1.Deployment {
	lbl := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		},
	}
}

// podWatch follows a namespace's pods and ReplicaSets event by event,
// keeping the extreme counts seen over the whole test: the fewest
// available pods (ready and not terminating) once armed, the most pods
// not terminating, and the largest sum of the sets' replicas.
//
// maxSurge bounds that sum, as in Kubernetes, not the pods: each set's
// controller acts on its own, so a new set's pod may start before an
// old set's controller has deleted the pod it was scaled down by.
type podWatch struct {
	mu        sync.Mutex
	pods      map[types.UID]*corev1.Pod
	sets      map[types.UID]int32
	armed     bool
	minAvail  int
	maxActive int
	maxSets   int32
}

func watchPods(t *testing.T, client kubernetes.Interface, ns string) *podWatch {
	w := &podWatch{pods: map[types.UID]*corev1.Pod{}, sets: map[types.UID]int32{}, minAvail: 1 << 30}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	setRS := func(obj any) {
		rs := obj.(*appsv1.ReplicaSet)
		w.mu.Lock()
		w.sets[rs.UID] = ptr.Deref(rs.Spec.Replicas, 1)
		w.observe()
		w.mu.Unlock()
	}
	factory.Apps().V1().ReplicaSets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: setRS, UpdateFunc: func(_, cur any) { setRS(cur) },
		DeleteFunc: func(obj any) {
			if rs, ok := controllerref.Deleted[*appsv1.ReplicaSet](obj); ok {
				w.mu.Lock()
				delete(w.sets, rs.UID)
				w.mu.Unlock()
			}
		},
	})
	inf := factory.Core().V1().Pods().Informer()
	set := func(obj any) {
		p := obj.(*corev1.Pod)
		w.mu.Lock()
		w.pods[p.UID] = p
		w.observe()
		w.mu.Unlock()
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: set, UpdateFunc: func(_, cur any) { set(cur) },
		DeleteFunc: func(obj any) {
			if p, ok := controllerref.Deleted[*corev1.Pod](obj); ok {
				w.mu.Lock()
				delete(w.pods, p.UID)
				w.observe()
				w.mu.Unlock()
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return w
}

func (w *podWatch) observe() {
	active, avail := 0, 0
	for _, p := range w.pods {
		if podutil.IsActive(p) {
			active++
			if podutil.IsReady(p) {
				avail++
			}
		}
	}
	w.maxActive = max(w.maxActive, active)
	var sets int32
	for _, n := range w.sets {
		sets += n
	}
	w.maxSets = max(w.maxSets, sets)
	if w.armed {
		w.minAvail = min(w.minAvail, avail)
	}
}

// arm starts checking availability (after the first rollout completes).
func (w *podWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = true
	w.minAvail = 1 << 30
	w.maxActive, w.maxSets = 0, 0
	w.observe()
}

func (w *podWatch) extremes() (minAvail, maxActive int, maxSets int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minAvail, w.maxActive, w.maxSets
}

// images counts the active pods by image.
func (w *podWatch) images() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, p := range w.pods {
		if podutil.IsActive(p) {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

// waitRolledOut waits until kubectl rollout status would report success.
func waitRolledOut(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration) {
	t.Helper()
	viewer := &polymorphichelpers.DeploymentStatusViewer{}
	workloadtest.Eventually(t, timeout, "kubectl rollout status "+name, func() (bool, string) {
		d, err := client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			return false, err.Error()
		}
		msg, done, err := viewer.Status(&unstructured.Unstructured{Object: u}, 0)
		if err != nil {
			return false, err.Error()
		}
		return done, fmt.Sprintf("%s (status %+v)", strings.TrimSpace(msg), d.Status)
	})
}

func setImage(t *testing.T, client kubernetes.Interface, ns, name, image string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		_, err = client.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rollbackAsKubectl does what kubectl rollout undo does, client-side: find
// the ReplicaSet of the previous revision (or of toRevision), and patch
// its template, without the pod-template-hash label, and its annotations
// into the Deployment.
func rollbackAsKubectl(ctx context.Context, client kubernetes.Interface, ns, name string, toRevision int64) error {
	d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d.Spec.Paused {
		return fmt.Errorf("you cannot rollback a paused deployment; resume it first")
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return err
	}
	list, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return err
	}
	var target *appsv1.ReplicaSet
	latest, previous := int64(-1), int64(-1)
	var latestRS *appsv1.ReplicaSet
	for i := range list.Items {
		rs := &list.Items[i]
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
			continue
		}
		v, err := strconv.ParseInt(rs.Annotations[deployment.RevisionAnnotation], 10, 64)
		if err != nil {
			continue
		}
		switch {
		case toRevision != 0:
			if v == toRevision {
				target = rs
			}
		case v > latest:
			previous, target = latest, latestRS
			latest, latestRS = v, rs
		case v > previous:
			previous, target = v, rs
		}
	}
	if target == nil {
		return fmt.Errorf("no rollout history found for deployment %q", name)
	}
	tmpl := target.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	skip := map[string]bool{corev1.LastAppliedConfigAnnotation: true, deployment.RevisionAnnotation: true,
		deployment.RevisionHistoryAnnotation: true, deployment.DesiredReplicasAnnotation: true,
		deployment.MaxReplicasAnnotation: true, "deprecated.deployment.rollback.to": true}
	ann := map[string]string{}
	for k := range skip {
		if v, ok := d.Annotations[k]; ok {
			ann[k] = v
		}
	}
	for k, v := range target.Annotations {
		if !skip[k] {
			ann[k] = v
		}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": tmpl},
		{"op": "replace", "path": "/metadata/annotations", "value": ann},
	})
	if err != nil {
		return err
	}
	_, err = client.AppsV1().Deployments(ns).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// history is what kubectl rollout history prints.
func history(t *testing.T, client kubernetes.Interface, ns, name string) []string {
	t.Helper()
	v, err := polymorphichelpers.HistoryViewerFor(schema.GroupKind{Group: "apps", Kind: "Deployment"}, client)
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.ViewHistory(ns, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	var revs []string
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "REVISION" {
			revs = append(revs, f[0])
		}
	}
	sort.Strings(revs)
	return revs
}

func TestRollingUpdateKeepsMinimumAvailableAndUndoRestoresTheOldImage(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ns := workloadtest.Namespace(t, client, "rollout")
	if _, err := testkubelet.Start(t.Context(), client, testkubelet.Options{Namespace: ns, ReadyAfter: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	workloadtest.RunManager(t, c.AdminConfig(0), replicaset.Descriptor(), deployment.Descriptor())
	pods := watchPods(t, client, ns)
	ctx := context.Background()

	const replicas, surge, unavailable = 4, 1, 1
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, webDeployment(ns, replicas, "img:a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns, "web", 30*time.Second)
	if got := pods.images(); got["img:a"] != replicas || len(got) != 1 {
		t.Fatalf("after creation: pods by image %v", got)
	}

	pods.arm()
	setImage(t, client, ns, "web", "img:b")
	waitRolledOut(t, client, ns, "web", 30*time.Second)
	workloadtest.Eventually(t, 10*time.Second, "old pods gone", func() (bool, string) {
		got := pods.images()
		return got["img:b"] == replicas && len(got) == 1, fmt.Sprint(got)
	})
	minAvail, maxActive, maxSets := pods.extremes()
	t.Logf("rollout: at least %d pods available, at most %d running, at most %d in the sets", minAvail, maxActive, maxSets)
	if minAvail < replicas-unavailable {
		t.Fatalf("only %d pods were available at one point of the rollout; maxUnavailable %d allows no fewer than %d", minAvail, unavailable, replicas-unavailable)
	}
	if maxSets > replicas+surge {
		t.Fatalf("the sets were sized for %d pods at once; maxSurge %d allows %d", maxSets, surge, replicas+surge)
	}
	if got := history(t, client, ns, "web"); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("rollout history revisions %v, want [1 2]", got)
	}

	pods.arm()
	if err := rollbackAsKubectl(ctx, client, ns, "web", 0); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns, "web", 30*time.Second)
	workloadtest.Eventually(t, 10*time.Second, "undo restores img:a", func() (bool, string) {
		got := pods.images()
		return got["img:a"] == replicas && len(got) == 1, fmt.Sprint(got)
	})
	if minAvail, _, maxSets := pods.extremes(); minAvail < replicas-unavailable || maxSets > replicas+surge {
		t.Fatalf("during undo: min available %d, sets sized for up to %d pods", minAvail, maxSets)
	}
	d, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Annotations[deployment.RevisionAnnotation] != "3" {
		t.Fatalf("deployment revision %q after undo, want 3", d.Annotations[deployment.RevisionAnnotation])
	}
	if got := history(t, client, ns, "web"); fmt.Sprint(got) != "[2 3]" {
		t.Fatalf("rollout history revisions after undo %v, want [2 3]", got)
	}
	sets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets.Items {
		if rs.Spec.Template.Spec.Containers[0].Image == "img:a" &&
			(rs.Annotations[deployment.RevisionAnnotation] != "3" || rs.Annotations[deployment.RevisionHistoryAnnotation] != "1") {
			t.Fatalf("img:a replica set annotations %v, want revision 3 with history 1", rs.Annotations)
		}
	}
}
