package endpointslice

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/endpoints"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// startPod creates pod and gives it its IP and readiness, as a kubelet
// would.
func startPod(ctx context.Context, t *testing.T, client kubernetes.Interface, b podB) {
	t.Helper()
	if err := createRunning(ctx, client, b); err != nil {
		t.Fatal(err)
	}
}

func createRunning(ctx context.Context, client kubernetes.Interface, b podB) error {
	p := b.Pod.DeepCopy()
	p.UID, p.Status = "", corev1.PodStatus{}
	created, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status = b.Status
	_, err = client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func setReady(ctx context.Context, t *testing.T, client kubernetes.Interface, name string, ready bool) {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func slicesOf(ctx context.Context, client kubernetes.Interface, svc string) ([]discoveryv1.EndpointSlice, error) {
	l, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func TestEndpointsFollowPodReadinessAndNamedPorts(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor(Config{}), endpoints.Descriptor()}})
	client := c.Client(0)
	ctx := context.Background()

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startPod(ctx, t, client, testPod("a").ip("10.1.0.1").ready().port("http", 8080))
	startPod(ctx, t, client, testPod("b").ip("10.1.0.2").ready().port("http", 9090))

	// portOf maps each address to its port and readiness in the slices.
	type seen struct {
		port  int32
		ready bool
	}
	sliceView := func() (map[string]seen, error) {
		items, err := slicesOf(ctx, client, "web")
		if err != nil {
			return nil, err
		}
		out := map[string]seen{}
		for _, s := range items {
			for _, ep := range s.Endpoints {
				if len(s.Ports) != 1 {
					return nil, fmt.Errorf("slice %s has ports %v", s.Name, s.Ports)
				}
				out[ep.Addresses[0]] = seen{*s.Ports[0].Port, *ep.Conditions.Ready}
			}
		}
		return out, nil
	}
	endpointsView := func() (map[string]seen, error) {
		ep, err := client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]seen{}
		for _, ss := range ep.Subsets {
			for _, a := range ss.Addresses {
				out[a.IP] = seen{ss.Ports[0].Port, true}
			}
			for _, a := range ss.NotReadyAddresses {
				out[a.IP] = seen{ss.Ports[0].Port, false}
			}
		}
		return out, nil
	}
	expect := func(what string, want map[string]seen) {
		t.Helper()
		for name, view := range map[string]func() (map[string]seen, error){"slices": sliceView, "endpoints": endpointsView} {
			clustertest.Eventually(t, 10*time.Second, what+" in "+name, func() (bool, error) {
				got, err := view()
				if err != nil {
					return false, err
				}
				return fmt.Sprint(got) == fmt.Sprint(want), fmt.Errorf("have %v, want %v", got, want)
			})
		}
	}
	expect("both pods ready on their own named port", map[string]seen{"10.1.0.1": {8080, true}, "10.1.0.2": {9090, true}})
	setReady(ctx, t, client, "b", false)
	expect("the unready pod marked not ready", map[string]seen{"10.1.0.1": {8080, true}, "10.1.0.2": {9090, false}})
	if err := client.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the deleted pod gone", map[string]seen{"10.1.0.2": {9090, false}})

	// The API server's own service has no selector: its endpoints stay
	// as the API server writes them.
	for _, s := range mustSlices(ctx, t, client, "kubernetes") {
		if s.Labels[discoveryv1.LabelManagedBy] == ControllerName {
			t.Errorf("slice %s of the kubernetes service is managed by the controller", s.Name)
		}
	}
}

func mustSlices(ctx context.Context, t *testing.T, client kubernetes.Interface, svc string) []discoveryv1.EndpointSlice {
	t.Helper()
	items, err := slicesOf(ctx, client, svc)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestManyPodsSpreadOverSeveralSlices(t *testing.T) {
	c := testcluster.New(t, 3)
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor(Config{})}})
	client := c.Client(0)
	ctx := context.Background()
	svc := testService(corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)})
	svc.UID = ""
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 130
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, n)
	for _, p := range readyPods(n) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := createRunning(ctx, client, podB{p}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 20*time.Second, fmt.Sprintf("%d endpoints in slices of at most %d", n, DefaultMaxEndpointsPerSlice), func() (bool, error) {
		items, err := slicesOf(ctx, client, "web")
		if err != nil {
			return false, err
		}
		total := 0
		for _, s := range items {
			if len(s.Endpoints) > DefaultMaxEndpointsPerSlice {
				return false, fmt.Errorf("slice %s has %d endpoints", s.Name, len(s.Endpoints))
			}
			total += len(s.Endpoints)
		}
		return total == n && len(items) == 2, fmt.Errorf("%d slices with %d endpoints", len(items), total)
	})
}
