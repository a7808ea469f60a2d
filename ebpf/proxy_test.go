package ebpf

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn/ebpf/datapath"
	"cairn/ebpf/internal/socktest"
	"cairn/internal/privtest"
	"cairn/internal/testcluster"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestMain(m *testing.M) {
	socktest.RunChildIfRequested()
	os.Exit(m.Run())
}

func TestServiceFromAPIIsProgrammedAndRefusedWithoutEndpoints(t *testing.T) {
	privtest.Require(t, privtest.CapBPF, privtest.CapNetAdmin, privtest.CapSysAdmin)
	cg := privtest.NewCgroup(t)
	ns := privtest.NewNetns(t)
	cfg := ProxyConfig{NodeName: "node-a", CgroupPath: cg.Path, PinPath: filepath.Join(privtest.BPFFS(t), "node-a")}
	if err := CheckSupport(cfg); err != nil {
		privtest.Unavailable(t, "%v", err)
	}
	// The API refuses loopback endpoints: give the "pods" addresses of
	// their own, inside the namespace.
	for _, a := range []string{"10.244.1.2/32", "10.244.1.3/32"} {
		if err := ns.AddAddr(netip.MustParsePrefix(a)); err != nil {
			t.Fatal(err)
		}
	}
	b1 := socktest.TCPBackend(t, ns, "10.244.1.2:8080", "pod-1")
	b2 := socktest.TCPBackend(t, ns, "10.244.1.3:8080", "pod-2")

	cluster := testcluster.New(t, 1)
	api := cluster.Client(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	svc, err := api.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http"),
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vip := svc.Spec.ClusterIP + ":80"
	if _, err := api.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.244.1.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	cfg.Client = api
	cfg.Metrics = reg
	cfg.Logger = testcluster.Logger()
	p, err := NewProxy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := p.Uninstall(); err != nil {
			t.Errorf("Uninstall: %v", err)
		}
	})

	eventually(t, "the Service is programmed with both endpoints", func() bool {
		return backendCount(t, p, vip) == 2
	})
	client := socktest.StartClient(t, cg, ns)
	eventually(t, "the programs are attached", func() bool { return client.TCP(vip).Err == "" })
	for range 30 {
		r := client.TCP(vip)
		if r.Err != "" || r.Peer != vip {
			t.Fatalf("connect %s: %+v", vip, r)
		}
	}
	if b1.Hits() == 0 || b2.Hits() == 0 {
		t.Errorf("backend hits %d/%d, want both used", b1.Hits(), b2.Hits())
	}

	t.Run("full resync writes nothing", func(t *testing.T) {
		before := gathered(t, reg, "cairn_ebpf_map_writes_total")
		if err := p.syncAll(); err != nil {
			t.Fatal(err)
		}
		if after := gathered(t, reg, "cairn_ebpf_map_writes_total"); after != before {
			t.Errorf("map writes went from %v to %v on an unchanged resync", before, after)
		}
	})

	if err := api.DiscoveryV1().EndpointSlices("default").Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Service is left without backends", func() bool { return backendCount(t, p, vip) == 0 })
	start := time.Now()
	if r := client.TCP(vip); r.Errno != "ECONNREFUSED" {
		t.Errorf("connect without endpoints = %+v, want ECONNREFUSED", r)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusal took %v", d)
	}
	if n := gathered(t, reg, "cairn_ebpf_sync_latency_seconds"); n < 1 {
		t.Errorf("sync latency observed %v times after a slice deletion", n)
	}
	if dump, _ := p.dp.Dump(); gathered(t, reg, "cairn_ebpf_services") != float64(len(dump)) {
		t.Errorf("cairn_ebpf_services = %v, maps hold %d", gathered(t, reg, "cairn_ebpf_services"), len(dump))
	}

	if err := api.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Service is gone from the maps", func() bool { return backendCount(t, p, vip) == -1 })
}

// backendCount is the number of backends programmed for addr, -1 if the
// frontend is not programmed at all.
func backendCount(t *testing.T, p *Proxy, addr string) int {
	t.Helper()
	svcs, err := p.dp.Dump()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		if s.Proto == datapath.TCP && netip.AddrPortFrom(s.Addr, s.Port).String() == addr {
			return len(s.Backends)
		}
	}
	return -1
}

// gathered sums a metric family: counter and gauge values, or histogram
// sample counts.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
