package daemonset_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/controllers/daemonset"
	"cairn/controllers/internal/podutil"
	"cairn/controllers/internal/workloadtest"
	"cairn/internal/testcluster"
	"cairn/internal/testkubelet"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/polymorphichelpers"
)

// podView follows a namespace's pods: which node each live one is on,
// whether any was created with a nodeName, and the fewest nodes with an
// available pod once armed.
type podView struct {
	mu       sync.Mutex
	pods     map[types.UID]*corev1.Pod
	withName []string
	armed    bool
	minNodes int
}

func viewPods(t *testing.T, client kubernetes.Interface, ns string) *podView {
	v := &podView{pods: map[types.UID]*corev1.Pod{}, minNodes: 1 << 30}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p := obj.(*corev1.Pod)
			v.mu.Lock()
			if p.Spec.NodeName != "" {
				v.withName = append(v.withName, p.Name)
			}
			v.pods[p.UID] = p
			v.observe()
			v.mu.Unlock()
		},
		UpdateFunc: func(_, cur any) {
			p := cur.(*corev1.Pod)
			v.mu.Lock()
			v.pods[p.UID] = p
			v.observe()
			v.mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			v.mu.Lock()
			delete(v.pods, obj.(*corev1.Pod).UID)
			v.observe()
			v.mu.Unlock()
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return v
}

func (v *podView) observe() {
	if !v.armed {
		return
	}
	nodes := map[string]bool{}
	for _, p := range v.pods {
		if podutil.IsActive(p) && podutil.IsReady(p) {
			nodes[p.Spec.NodeName] = true
		}
	}
	v.minNodes = min(v.minNodes, len(nodes))
}

func (v *podView) arm() {
	v.mu.Lock()
	v.armed = true
	v.observe()
	v.mu.Unlock()
}

// placement lists node=image for every live pod, sorted.
func (v *podView) placement() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, p := range v.pods {
		if podutil.IsActive(p) {
			out = append(out, p.Spec.NodeName+"="+p.Spec.Containers[0].Image)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec: corev1.NodeSpec{Taints: taints}}
}

func agent(ns string) *appsv1.DaemonSet {
	lbl := map[string]string{"app": "agent"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
		},
	}
}

func waitRolledOut(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	viewer := &polymorphichelpers.DaemonSetStatusViewer{}
	workloadtest.Eventually(t, 30*time.Second, "kubectl rollout status daemonset/agent", func() (bool, string) {
		ds, err := client.AppsV1().DaemonSets(ns).Get(context.Background(), "agent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ds)
		if err != nil {
			return false, err.Error()
		}
		msg, done, err := viewer.Status(&unstructured.Unstructured{Object: u}, 0)
		if err != nil {
			return false, err.Error()
		}
		return done, fmt.Sprintf("%s (status %+v)", strings.TrimSpace(msg), ds.Status)
	})
}

func TestDaemonSetRunsOnePodPerEligibleNode(t *testing.T) {
	c := testcluster.New(t, 3)
	client := c.Client(0)
	ctx := context.Background()
	dedicated := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	for _, n := range []*corev1.Node{node("n1"), node("n2"), node("n3"), node("tainted", dedicated)} {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := workloadtest.Namespace(t, client, "daemons")
	if _, err := testkubelet.Start(t.Context(), client, testkubelet.Options{Namespace: ns, ReadyAfter: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	workloadtest.RunManager(t, c.AdminConfig(0), daemonset.Descriptor())
	pods := viewPods(t, client, ns)

	if _, err := client.AppsV1().DaemonSets(ns).Create(ctx, agent(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns)
	if got := pods.placement(); got != "n1=agent:1 n2=agent:1 n3=agent:1" {
		t.Fatalf("pods on %q, want one on each of n1, n2, n3 and none on the tainted node", got)
	}
	ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := ds.Status; st.DesiredNumberScheduled != 3 || st.CurrentNumberScheduled != 3 || st.NumberReady != 3 ||
		st.NumberAvailable != 3 || st.UpdatedNumberScheduled != 3 || st.NumberMisscheduled != 0 || st.ObservedGeneration != ds.Generation {
		t.Fatalf("status %+v", st)
	}

	// A new node gets its pod; a rolling update keeps all but one node
	// (maxUnavailable 1) served.
	if _, err := client.CoreV1().Nodes().Create(ctx, node("n4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	workloadtest.Eventually(t, 20*time.Second, "a pod on the new node", func() (bool, string) {
		got := pods.placement()
		return got == "n1=agent:1 n2=agent:1 n3=agent:1 n4=agent:1", got
	})
	waitRolledOut(t, client, ns)
	pods.arm()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds.Spec.Template.Spec.Containers[0].Image = "agent:2"
		_, err = client.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns)
	workloadtest.Eventually(t, 20*time.Second, "every node on agent:2", func() (bool, string) {
		got := pods.placement()
		return got == "n1=agent:2 n2=agent:2 n3=agent:2 n4=agent:2", got
	})
	pods.mu.Lock()
	minNodes, withName := pods.minNodes, pods.withName
	pods.mu.Unlock()
	if minNodes < 3 {
		t.Fatalf("only %d of 4 nodes had an available pod at one point of the update; maxUnavailable 1 allows 3", minNodes)
	}
	if len(withName) > 0 {
		t.Fatalf("pods %v were created with a nodeName; daemon pods must go through the scheduler", withName)
	}
}
