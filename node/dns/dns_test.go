package dns

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn/internal/testcluster"
	"cairn/internal/testport"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// upstream runs a resolver on loopback, on UDP and TCP, that knows one
// name.
func upstream(t *testing.T, name, addr string) string {
	t.Helper()
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", ports[0])
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", ports[0])
	if err != nil {
		t.Fatal(err)
	}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		q := req.Question[0]
		if strings.EqualFold(q.Name, name) && q.Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(addr)}}
		} else {
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: ln, Handler: handler}} {
		go srv.ActivateAndServe()
		t.Cleanup(func() { srv.Shutdown() })
	}
	return ports[0]
}

// startServer runs a node DNS server on loopback against client.
func startServer(t *testing.T, client kubernetes.Interface, upstreams []string, metrics *Metrics) string {
	t.Helper()
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort(ports[0])
	inf := informers.NewSharedInformerFactory(client, 0)
	s, err := New(Config{Informers: inf, Addr: addr, Upstreams: upstreams, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inf.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		inf.Shutdown()
	})
	if !s.WaitForSync(ctx) {
		t.Fatal("the DNS caches did not sync")
	}
	return addr.String()
}

func query(t *testing.T, server, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("%s %s: %v", dns.TypeToString[qtype], name, err)
	}
	return resp
}

// records renders an answer section without the TTLs and headers, e.g.
// "A 10.96.0.12".
func records(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch r := rr.(type) {
		case *dns.A:
			out = append(out, "A "+r.A.String())
		case *dns.AAAA:
			out = append(out, "AAAA "+r.AAAA.String())
		case *dns.CNAME:
			out = append(out, "CNAME "+r.Target)
		case *dns.PTR:
			out = append(out, "PTR "+r.Ptr)
		case *dns.SRV:
			out = append(out, "SRV "+r.Target+" "+itoa(r.Port))
		default:
			out = append(out, rr.String())
		}
	}
	return out
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }

func TestClusterNames(t *testing.T) {
	c := testcluster.New(t, 1)
	client := c.Client(0)
	ctx := context.Background()
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	web, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}},
	}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = client.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "db-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.7"}, Hostname: ptr.To("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.244.1.9"}, Hostname: ptr.To("db-1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Port: ptr.To[int32](5432)}},
	}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.org"},
	}, metav1.CreateOptions{})
	mustCreate(err)

	up := upstream(t, "db.example.org.", "192.0.2.7")
	reg := prometheus.NewPedanticRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	server := startServer(t, client, []string{up}, metrics)
	clusterIP := web.Spec.ClusterIP
	want := map[[2]string]float64{} // source, rcode → queries
	notOurs := reverse(t, "192.0.2.99")
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
	}{
		{"web.default.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"A " + clusterIP}},
		{"WEB.Default.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"A " + clusterIP}},
		{"web.default.svc.cluster.local", dns.TypeAAAA, dns.RcodeSuccess, nil},
		{"_http._tcp.web.default.svc.cluster.local", dns.TypeSRV, dns.RcodeSuccess, []string{"SRV web.default.svc.cluster.local. 80"}},
		{"_http._udp.web.default.svc.cluster.local", dns.TypeSRV, dns.RcodeNameError, nil},
		// Headless: the ready endpoint only, and each by its hostname.
		{"db.default.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"A 10.244.0.7"}},
		{"db-0.db.default.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"A 10.244.0.7"}},
		{"db-1.db.default.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil},
		{"_pg._tcp.db.default.svc.cluster.local", dns.TypeSRV, dns.RcodeSuccess, []string{"SRV db-0.db.default.svc.cluster.local. 5432"}},
		{"ext.default.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"CNAME db.example.org.", "A 192.0.2.7"}},
		{"10-244-3-4.default.pod.cluster.local", dns.TypeA, dns.RcodeSuccess, []string{"A 10.244.3.4"}},
		{"nosuch.default.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil},
		{"web.other.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil},
		{"web.default.cluster.local", dns.TypeA, dns.RcodeNameError, nil},
		{"default.svc.cluster.local", dns.TypeA, dns.RcodeSuccess, nil},
		// Reverse lookups of the cluster's addresses, and of others.
		{reverse(t, clusterIP), dns.TypePTR, dns.RcodeSuccess, []string{"PTR web.default.svc.cluster.local."}},
		{reverse(t, "10.244.0.7"), dns.TypePTR, dns.RcodeSuccess, []string{"PTR db-0.db.default.svc.cluster.local."}},
		{notOurs, dns.TypePTR, dns.RcodeNameError, nil},
		// Outside the domain: the upstream's answer.
		{"db.example.org", dns.TypeA, dns.RcodeSuccess, []string{"A 192.0.2.7"}},
		{"nosuch.example.org", dns.TypeA, dns.RcodeNameError, nil},
	} {
		source := sourceCluster
		if strings.HasSuffix(tc.name, ".example.org") || tc.name == notOurs {
			source = sourceUpstream
		}
		for _, network := range []string{"udp", "tcp"} {
			want[[2]string{source, dns.RcodeToString[tc.rcode]}]++
			resp := query(t, server, network, tc.name, tc.qtype)
			got := records(resp.Answer)
			if resp.Rcode != tc.rcode || strings.Join(got, ";") != strings.Join(tc.want, ";") {
				t.Errorf("%s %s over %s: %s %v, want %s %v", dns.TypeToString[tc.qtype], tc.name, network,
					dns.RcodeToString[resp.Rcode], got, dns.RcodeToString[tc.rcode], tc.want)
			}
			inZone := strings.HasSuffix(strings.ToLower(tc.name), "cluster.local")
			if inZone && len(resp.Answer) == 0 && (len(resp.Ns) != 1 || resp.Ns[0].Header().Rrtype != dns.TypeSOA) {
				t.Errorf("%s %s: a negative answer without the zone's SOA: %v", dns.TypeToString[tc.qtype], tc.name, resp.Ns)
			}
			if inZone && !resp.Authoritative {
				t.Errorf("%s %s: not authoritative", dns.TypeToString[tc.qtype], tc.name)
			}
		}
	}

	// Each query was counted once, by who answered it and how.
	for key, n := range want {
		if got := counterValue(t, metrics.requests.WithLabelValues(key[0], key[1])); got != n {
			t.Errorf("cairn_dns_requests_total{source=%q,rcode=%q} = %v, want %v", key[0], key[1], got, n)
		}
	}
	if _, err := reg.Gather(); err != nil {
		t.Error(err)
	}

	// The names follow the API: a deleted Service's name is gone.
	if err := client.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for query(t, server, "udp", "web.default.svc.cluster.local", dns.TypeA).Rcode != dns.RcodeNameError {
		if time.Now().After(deadline) {
			t.Fatal("web.default.svc.cluster.local still resolves 10 s after the Service was deleted")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func reverse(t *testing.T, ip string) string {
	t.Helper()
	name, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func TestReverseAddr(t *testing.T) {
	for _, ip := range []string{"10.96.0.1", "fd00::1:53", "2001:db8::ff00:42:8329"} {
		name, err := dns.ReverseAddr(ip)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := reverseAddr(name); !ok || got != netip.MustParseAddr(ip) {
			t.Errorf("%s: %v %v", name, got, ok)
		}
	}
	for _, name := range []string{"3.2.1.in-addr.arpa.", "x.3.2.1.in-addr.arpa.", "1.0.ip6.arpa.", "example.org."} {
		if got, ok := reverseAddr(name); ok {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestUpstreamsComeFromResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "# comment\nsearch example.org\nnameserver 10.0.0.2\nnameserver fd00::53\nnameserver bogus\noptions ndots:2\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readNameservers(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "10.0.0.2:53 [fd00::53]:53" {
		t.Errorf("nameservers %v", got)
	}
	empty := filepath.Join(t.TempDir(), "empty.conf")
	os.WriteFile(empty, []byte("search x\n"), 0o644)
	if _, err := readNameservers(empty); err == nil || !strings.Contains(err.Error(), "no nameserver") {
		t.Errorf("a resolv.conf without nameservers: %v", err)
	}
}

func TestNewRejectsABadDomain(t *testing.T) {
	c := testcluster.New(t, 1)
	_, err := New(Config{Informers: informers.NewSharedInformerFactory(c.Client(0), 0), Addr: netip.MustParseAddrPort("127.0.0.1:53"), Domain: "bad domain"})
	if err == nil || !strings.Contains(err.Error(), "not a domain name") {
		t.Fatalf("New with a bad domain: %v", err)
	}
}

func TestForwardingWithoutUpstreamsFailsTheQuery(t *testing.T) {
	c := testcluster.New(t, 1)
	server := startServer(t, c.Client(0), []string{}, nil)
	if resp := query(t, server, "udp", "example.org", dns.TypeA); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("with no upstream: %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
}
