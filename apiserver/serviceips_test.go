package apiserver

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// svcBuilder keeps service fixtures short: testService("web").IP("10.96.0.10").obj().
type svcBuilder struct{ s *corev1.Service }

func testService(name string) svcBuilder {
	return svcBuilder{&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}}
}

func (b svcBuilder) IP(ip string) svcBuilder { b.s.Spec.ClusterIP = ip; return b }

func (b svcBuilder) Type(t corev1.ServiceType) svcBuilder { b.s.Spec.Type = t; return b }

func (b svcBuilder) NodePort(port int32) svcBuilder { b.s.Spec.Ports[0].NodePort = port; return b }

func (b svcBuilder) Port(name string, port int32, proto corev1.Protocol) svcBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: proto})
	return b
}

func (b svcBuilder) obj() *corev1.Service { return b.s }

func inServiceCIDR(t *testing.T, ip string) bool {
	t.Helper()
	a, err := netip.ParseAddr(ip)
	return err == nil && netip.MustParsePrefix(DefaultServiceCIDR).Contains(a)
}

// allocationKeys counts the allocations stored under prefix.
func allocationKeys(t *testing.T, c *testCluster, prefix string) int64 {
	t.Helper()
	resp, err := c.apis[0].cfg.Storage.KV.Get(ctxT(t), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// deleteServices deletes every service, one by one as kubectl does.
func deleteServices(t *testing.T, svcs typedcorev1.ServiceInterface) {
	t.Helper()
	l, err := svcs.List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range l.Items {
		if err := svcs.Delete(ctxT(t), svc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func waitKubernetesService(t *testing.T, cs kubernetes.Interface) *corev1.Service {
	t.Helper()
	var err error
	for i := 0; i < 200; i++ {
		var svc *corev1.Service
		if svc, err = cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctxT(t), kubernetesServiceName, metav1.GetOptions{}); err == nil {
			return svc
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no kubernetes service: %v", err)
	return nil
}

// TestServiceClusterIPs checks cluster IP allocation as users meet it:
// distinct IPs however many API servers create at once, requested IPs
// honoured or refused with Kubernetes' 422, IPs free again after delete.
func TestServiceClusterIPs(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	createNamespace(t, c, "team")
	svcs := cs.CoreV1().Services("team")

	t.Run("KubernetesServiceHasTheFirstIP", func(t *testing.T) {
		svc := waitKubernetesService(t, cs)
		if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].Name != "https" {
			t.Fatalf("kubernetes service: clusterIP %s ports %+v", svc.Spec.ClusterIP, svc.Spec.Ports)
		}
	})

	t.Run("ConcurrentCreatesOnThreeServersGetDistinctIPs", func(t *testing.T) {
		const perServer = 8
		var mu sync.Mutex
		ips := map[string]string{}
		var wg sync.WaitGroup
		errs := make(chan error, 3*perServer)
		for i := 0; i < 3; i++ {
			client := c.client(i)
			for j := 0; j < perServer; j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := fmt.Sprintf("c%d-%d", i, j)
					out, err := client.CoreV1().Services("team").Create(ctx, testService(name).obj(), metav1.CreateOptions{})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if other, dup := ips[out.Spec.ClusterIP]; dup {
						errs <- fmt.Errorf("%s and %s both got %s", name, other, out.Spec.ClusterIP)
					}
					ips[out.Spec.ClusterIP] = name
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for ip := range ips {
			if !inServiceCIDR(t, ip) || ip == "10.96.0.1" {
				t.Errorf("allocated %s: outside the range or the kubernetes service's", ip)
			}
		}
		if len(ips) != 3*perServer {
			t.Fatalf("%d distinct IPs for %d services", len(ips), 3*perServer)
		}
	})

	t.Run("FamiliesAreSet", func(t *testing.T) {
		out, err := svcs.Get(ctx, "c0-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Spec.ClusterIPs) != 1 || out.Spec.ClusterIPs[0] != out.Spec.ClusterIP || len(out.Spec.IPFamilies) != 1 || out.Spec.IPFamilies[0] != corev1.IPv4Protocol {
			t.Fatalf("clusterIPs %v families %v", out.Spec.ClusterIPs, out.Spec.IPFamilies)
		}
	})

	t.Run("RequestedIPIsHonoured", func(t *testing.T) {
		out, err := svcs.Create(ctx, testService("fixed").IP("10.96.0.10").obj(), metav1.CreateOptions{})
		if err != nil || out.Spec.ClusterIP != "10.96.0.10" {
			t.Fatalf("requested 10.96.0.10: %v %v", out.Spec.ClusterIP, err)
		}
	})

	refused := []struct {
		name, ip, msg string
	}{
		{"RequestedIPInUseIs422", "10.96.0.10", "provided IP is already allocated"},
		{"KubernetesServiceIPIs422", "10.96.0.1", "provided IP is already allocated"},
		{"RequestedIPOutOfRangeIs422", "10.200.0.1", "is not in the valid range"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.client(1).CoreV1().Services("team").Create(ctx, testService("refused").IP(tt.ip).obj(), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("requested %s: %v, want 422 %q", tt.ip, err, tt.msg)
			}
		})
	}

	t.Run("DeletedServiceIPIsReusable", func(t *testing.T) {
		if err := svcs.Delete(ctx, "fixed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := c.client(2).CoreV1().Services("team").Create(ctx, testService("fixed2").IP("10.96.0.10").obj(), metav1.CreateOptions{})
		if err != nil || out.Spec.ClusterIP != "10.96.0.10" {
			t.Fatalf("reusing a released IP: %v", err)
		}
	})

	t.Run("FailedCreateKeepsNoIP", func(t *testing.T) {
		before := allocationKeys(t, c, serviceIPPrefix)
		if _, err := svcs.Create(ctx, testService("c0-0").IP("10.96.0.11").obj(), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create: %v, want AlreadyExists", err)
		}
		if _, err := svcs.Create(ctx, testService("c0-0").obj(), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create: %v, want AlreadyExists", err)
		}
		if _, err := svcs.Create(ctx, testService("bad_name").obj(), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("invalid service: %v, want 422", err)
		}
		if after := allocationKeys(t, c, serviceIPPrefix); after != before {
			t.Fatalf("failed creates left %d allocations behind", after-before)
		}
		if _, err := svcs.Create(ctx, testService("eleven").IP("10.96.0.11").obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the IP of a failed create: %v", err)
		}
	})

	t.Run("DryRunAllocatesNothing", func(t *testing.T) {
		out, err := svcs.Create(ctx, testService("dry").IP("10.96.0.12").obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || out.Spec.ClusterIP != "10.96.0.12" {
			t.Fatalf("dry run: %v %v", out, err)
		}
		out, err = svcs.Create(ctx, testService("dry2").obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || !inServiceCIDR(t, out.Spec.ClusterIP) {
			t.Fatalf("dry run without a requested IP: %v %v", out, err)
		}
		if _, err := svcs.Create(ctx, testService("twelve").IP("10.96.0.12").obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the IP of a dry run: %v", err)
		}
	})

	t.Run("OtherFamilyIs422", func(t *testing.T) {
		v6 := testService("v6").obj()
		v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		if _, err := svcs.Create(ctx, v6, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "not configured on this cluster") {
			t.Fatalf("IPv6 service on an IPv4 range: %v, want 422", err)
		}
		dual := testService("dual").obj()
		dual.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		if _, err := svcs.Create(ctx, dual, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "dual-stack") {
			t.Fatalf("dual-stack service on a single-stack cluster: %v, want 422", err)
		}
	})

	t.Run("HeadlessAndExternalNameGetNoIP", func(t *testing.T) {
		before := allocationKeys(t, c, serviceIPPrefix)
		out, err := svcs.Create(ctx, testService("headless").IP(corev1.ClusterIPNone).obj(), metav1.CreateOptions{})
		if err != nil || out.Spec.ClusterIP != corev1.ClusterIPNone || len(out.Spec.ClusterIPs) != 1 || out.Spec.ClusterIPs[0] != corev1.ClusterIPNone {
			t.Fatalf("headless: %v %v", out.Spec.ClusterIPs, err)
		}
		ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
		if out, err = svcs.Create(ctx, ext, metav1.CreateOptions{}); err != nil || out.Spec.ClusterIP != "" {
			t.Fatalf("ExternalName: %v %v", out.Spec.ClusterIP, err)
		}
		if after := allocationKeys(t, c, serviceIPPrefix); after != before {
			t.Fatalf("headless and ExternalName services took %d IPs", after-before)
		}
		if err := svcs.Delete(ctx, "headless", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("DeleteReleasesEveryIP", func(t *testing.T) {
		before := allocationKeys(t, c, serviceIPPrefix)
		deleteServices(t, svcs)
		if after := allocationKeys(t, c, serviceIPPrefix); after != 1 {
			t.Fatalf("%d allocations left of %d, want the kubernetes service's only", after, before)
		}
	})
}

// TestServiceNodePorts checks node port allocation for NodePort and
// LoadBalancer services.
func TestServiceNodePorts(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	createNamespace(t, c, "team")
	svcs := cs.CoreV1().Services("team")
	inRange := func(p int32) bool { return p >= 30000 && p <= 32767 }

	t.Run("EachPortGetsOne", func(t *testing.T) {
		svc := testService("np").Type(corev1.ServiceTypeNodePort).Port("https", 443, corev1.ProtocolTCP).obj()
		out, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, b := out.Spec.Ports[0].NodePort, out.Spec.Ports[1].NodePort
		if !inRange(a) || !inRange(b) || a == b {
			t.Fatalf("node ports %d and %d", a, b)
		}
	})

	t.Run("SamePortTCPAndUDPShareOne", func(t *testing.T) {
		svc := testService("dns").Type(corev1.ServiceTypeNodePort).obj()
		svc.Spec.Ports = []corev1.ServicePort{{Name: "tcp", Port: 53, Protocol: corev1.ProtocolTCP}, {Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP}}
		out, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := out.Spec.Ports[0].NodePort, out.Spec.Ports[1].NodePort; !inRange(a) || a != b {
			t.Fatalf("node ports %d and %d, want one shared", a, b)
		}
	})

	t.Run("RequestedPortHonouredThenRefused", func(t *testing.T) {
		out, err := svcs.Create(ctx, testService("fixed").Type(corev1.ServiceTypeNodePort).NodePort(30080).obj(), metav1.CreateOptions{})
		if err != nil || out.Spec.Ports[0].NodePort != 30080 {
			t.Fatalf("requested 30080: %v", err)
		}
		before := allocationKeys(t, c, serviceIPPrefix)
		_, err = c.client(1).CoreV1().Services("team").Create(ctx, testService("again").Type(corev1.ServiceTypeNodePort).NodePort(30080).obj(), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is already allocated") {
			t.Fatalf("30080 again: %v, want 422", err)
		}
		if after := allocationKeys(t, c, serviceIPPrefix); after != before {
			t.Fatalf("a refused node port kept the service's cluster IP")
		}
		_, err = svcs.Create(ctx, testService("low").Type(corev1.ServiceTypeNodePort).NodePort(8080).obj(), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is not in the valid range") {
			t.Fatalf("node port 8080: %v, want 422", err)
		}
		if err := svcs.Delete(ctx, "fixed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := svcs.Create(ctx, testService("again").Type(corev1.ServiceTypeNodePort).NodePort(30080).obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("30080 after its service went: %v", err)
		}
	})

	t.Run("LoadBalancer", func(t *testing.T) {
		lb := testService("lb").Type(corev1.ServiceTypeLoadBalancer).obj()
		lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		out, err := svcs.Create(ctx, lb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !inRange(out.Spec.Ports[0].NodePort) || !inRange(out.Spec.HealthCheckNodePort) || out.Spec.HealthCheckNodePort == out.Spec.Ports[0].NodePort {
			t.Fatalf("load balancer: node port %d health check %d", out.Spec.Ports[0].NodePort, out.Spec.HealthCheckNodePort)
		}
		none := testService("lb-none").Type(corev1.ServiceTypeLoadBalancer).obj()
		none.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
		if out, err = svcs.Create(ctx, none, metav1.CreateOptions{}); err != nil || out.Spec.Ports[0].NodePort != 0 {
			t.Fatalf("allocateLoadBalancerNodePorts=false: %v %v", out.Spec.Ports, err)
		}
	})

	t.Run("DeleteReleasesEveryPort", func(t *testing.T) {
		deleteServices(t, svcs)
		if n := allocationKeys(t, c, nodePortPrefix); n != 0 {
			t.Fatalf("%d node ports still allocated", n)
		}
	})
}

// TestOrphanedAllocations checks that allocations no service holds (left
// by a server that crashed between allocating and storing, or between
// deleting and releasing) are taken over or collected once old enough,
// and never while young.
func TestOrphanedAllocations(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	createNamespace(t, c, "team")
	kv := c.apis[0].cfg.Storage.KV
	orphan := func(ip string, age time.Duration) {
		t.Helper()
		v, _ := json.Marshal(owner{Namespace: "team", Name: "crashed", UID: "uid-1", Since: time.Now().Add(-age)})
		if _, err := kv.Put(ctx, serviceIPPrefix+ip, string(v)); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(ip string) bool {
		resp, err := kv.Get(ctx, serviceIPPrefix+ip, clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count == 1
	}

	t.Run("OldOrphanIsTakenOver", func(t *testing.T) {
		orphan("10.96.0.30", time.Hour)
		if _, err := cs.CoreV1().Services("team").Create(ctx, testService("heir").IP("10.96.0.30").obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("requesting an orphaned IP: %v", err)
		}
	})

	t.Run("YoungOrphanIsNot", func(t *testing.T) {
		orphan("10.96.0.31", 0)
		if _, err := cs.CoreV1().Services("team").Create(ctx, testService("early").IP("10.96.0.31").obj(), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("requesting a just allocated IP: %v, want 422", err)
		}
	})

	t.Run("CollectorFreesOnlyOldOrphans", func(t *testing.T) {
		orphan("10.96.0.32", time.Hour)
		c.apis[1].services.collectOrphans(ctx)
		if exists("10.96.0.32") {
			t.Fatal("an old orphan survived collection")
		}
		if !exists("10.96.0.31") {
			t.Fatal("a young allocation was collected")
		}
		if !exists("10.96.0.30") || !exists("10.96.0.1") {
			t.Fatal("a live service's IP was collected")
		}
	})
}
