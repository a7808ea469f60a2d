package datapath

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn/ebpf/internal/socktest"
	"cairn/internal/privtest"
)

func TestMain(m *testing.M) {
	socktest.RunChildIfRequested()
	os.Exit(m.Run())
}

// env is one agent's worth of datapath: a cgroup with the programs
// attached, a network namespace holding the backends, and a client process
// in both.
type env struct {
	t      *testing.T
	cg     *privtest.Cgroup
	ns     *privtest.Netns
	cfg    Config
	dp     *Datapath
	client *socktest.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	privtest.Require(t, privtest.CapBPF, privtest.CapNetAdmin, privtest.CapSysAdmin)
	e := &env{t: t, cg: privtest.NewCgroup(t), ns: privtest.NewNetns(t)}
	e.cfg = Config{CgroupPath: e.cg.Path, PinPath: filepath.Join(privtest.BPFFS(t), "node-a")}
	if err := CheckSupport(e.cfg); err != nil {
		privtest.Unavailable(t, "%v", err)
	}
	e.dp = e.open()
	t.Cleanup(func() {
		if err := Uninstall(e.cfg.PinPath); err != nil {
			t.Errorf("uninstall: %v", err)
		}
	})
	if err := e.dp.Attach(); err != nil {
		t.Fatal(err)
	}
	e.client = socktest.StartClient(t, e.cg, e.ns)
	return e
}

func (e *env) open() *Datapath {
	e.t.Helper()
	dp, err := Open(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { dp.Close() })
	return dp
}

func (e *env) tcpBackends(n int, port int) []*socktest.Backend {
	var bs []*socktest.Backend
	for i := range n {
		bs = append(bs, socktest.TCPBackend(e.t, e.ns, fmt.Sprintf("127.0.0.%d:%d", i+2, port), fmt.Sprintf("b%d", i+1)))
	}
	return bs
}

func service(fe Frontend, bs ...*socktest.Backend) Service {
	s := Service{Frontend: fe}
	for _, b := range bs {
		s.Backends = append(s.Backends, b.Addr)
	}
	return s
}

func (e *env) upsert(svcs ...Service) {
	e.t.Helper()
	if err := e.dp.Upsert(svcs...); err != nil {
		e.t.Fatal(err)
	}
}

var vip = Frontend{Addr: netip.MustParseAddr("10.96.0.10"), Port: 80, Proto: TCP}

func TestConnectToClusterIPReachesEveryBackend(t *testing.T) {
	e := newEnv(t)
	bs := e.tcpBackends(3, 8080)
	e.upsert(service(vip, bs...))

	names := map[string]int{}
	for range 60 {
		r := e.client.TCP("10.96.0.10:80")
		if r.Err != "" {
			t.Fatalf("connect to the ClusterIP: %s", r.Err)
		}
		if r.Peer != "10.96.0.10:80" {
			t.Fatalf("getpeername = %s, want the ClusterIP 10.96.0.10:80", r.Peer)
		}
		names[r.Name]++
	}
	for _, b := range bs {
		if b.Hits() == 0 {
			t.Errorf("backend %s got no connection in 60: %v", b.Name, names)
		}
	}
}

func TestRemovedBackendGetsNoNewConnectionsButKeepsOpenOnes(t *testing.T) {
	e := newEnv(t)
	bs := e.tcpBackends(3, 8080)
	e.upsert(service(vip, bs...))

	// Hold a connection to b3, whichever attempt lands there.
	held := 0
	for range 200 {
		r := e.client.Hold("10.96.0.10:80")
		if r.Err != "" {
			t.Fatal(r.Err)
		}
		if r.Name == "b3" {
			held = r.ID
			break
		}
		e.client.Close(r.ID)
	}
	if held == 0 {
		t.Fatal("no connection reached b3 in 200 attempts")
	}

	e.upsert(service(vip, bs[0], bs[1]))
	before := bs[2].Hits()
	for range 40 {
		if r := e.client.TCP("10.96.0.10:80"); r.Err != "" || r.Name == "b3" {
			t.Fatalf("new connection after b3 left: %+v", r)
		}
	}
	if got := bs[2].Hits(); got != before {
		t.Errorf("b3 accepted %d new connections after removal", got-before)
	}
	if err := e.client.Ping(held); err != nil {
		t.Errorf("connection opened before the removal broke: %v", err)
	}
}

func TestUDPReplyArrivesFromServiceAddress(t *testing.T) {
	e := newEnv(t)
	dns := Frontend{Addr: netip.MustParseAddr("10.96.0.53"), Port: 53, Proto: UDP}
	b1 := socktest.UDPBackend(t, e.ns, "127.0.0.2:5353", "u1")
	b2 := socktest.UDPBackend(t, e.ns, "127.0.0.3:5353", "u2")
	e.upsert(service(dns, b1, b2))

	for name, send := range map[string]func(string) socktest.Result{
		"sendmsg": e.client.UDP, "connected": e.client.UDPConnected,
	} {
		t.Run(name, func(t *testing.T) {
			for range 10 {
				r := send("10.96.0.53:53")
				if r.Err != "" {
					t.Fatal(r.Err)
				}
				if r.Name != "u1" && r.Name != "u2" {
					t.Fatalf("reply %q from an unexpected backend", r.Name)
				}
				if r.Peer != "10.96.0.53:53" {
					t.Fatalf("recvmsg source = %s, want the Service address 10.96.0.53:53", r.Peer)
				}
			}
		})
	}
}

func TestServiceWithoutEndpointsRefusesAtOnce(t *testing.T) {
	e := newEnv(t)
	udp := vip
	udp.Proto = UDP
	e.upsert(Service{Frontend: vip}, Service{Frontend: udp})
	for name, call := range map[string]func(string) socktest.Result{
		"tcp connect": e.client.TCP, "udp sendmsg": e.client.UDP, "udp connect": e.client.UDPConnected,
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			if r := call("10.96.0.10:80"); r.Errno != "ECONNREFUSED" {
				t.Fatalf("got %+v, want ECONNREFUSED", r)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("refusal took %v", d)
			}
		})
	}
}

func TestProcessOutsideCgroupIsNotTranslated(t *testing.T) {
	e := newEnv(t)
	bs := e.tcpBackends(1, 8080)
	e.upsert(service(vip, bs...))
	outside := socktest.StartClient(t, nil, e.ns)

	// The namespace has no route to the ClusterIP range, so an
	// untranslated connect fails at once and sends nothing.
	if r := outside.TCP("10.96.0.10:80"); r.Errno != "ENETUNREACH" {
		t.Errorf("connect from outside the cgroup = %+v, want ENETUNREACH (untranslated)", r)
	}
	if r := outside.TCP(bs[0].Addr.String()); r.Err != "" || r.Peer != bs[0].Addr.String() {
		t.Errorf("direct connect from outside the cgroup = %+v", r)
	}
	if r := e.client.TCP("10.96.0.10:80"); r.Name != "b1" {
		t.Errorf("connect from inside the cgroup = %+v", r)
	}
}

func TestIPv6ClusterIP(t *testing.T) {
	e := newEnv(t)
	fe6 := Frontend{Addr: netip.MustParseAddr("fd00:96::10"), Port: 80, Proto: TCP}
	b1 := socktest.TCPBackend(t, e.ns, "[::1]:8081", "v6a")
	b2 := socktest.TCPBackend(t, e.ns, "[::1]:8082", "v6b")
	e.upsert(service(fe6, b1, b2))
	for range 30 {
		r := e.client.TCP("[fd00:96::10]:80")
		if r.Err != "" {
			t.Fatal(r.Err)
		}
		if r.Peer != "[fd00:96::10]:80" {
			t.Fatalf("getpeername = %s, want [fd00:96::10]:80", r.Peer)
		}
	}
	if b1.Hits() == 0 || b2.Hits() == 0 {
		t.Errorf("hits %d/%d: both IPv6 backends should get traffic", b1.Hits(), b2.Hits())
	}
}

func TestSessionAffinityKeepsClientOnOneBackend(t *testing.T) {
	e := newEnv(t)
	bs := e.tcpBackends(4, 8080)
	s := service(vip, bs...)
	s.AffinityTimeout = time.Hour
	e.upsert(s)
	first := e.client.TCP("10.96.0.10:80")
	if first.Err != "" {
		t.Fatal(first.Err)
	}
	for range 20 {
		if r := e.client.TCP("10.96.0.10:80"); r.Name != first.Name {
			t.Fatalf("connection went to %s after %s with ClientIP affinity", r.Name, first.Name)
		}
	}
	// When that backend leaves, the client moves on.
	var rest []*socktest.Backend
	for _, b := range bs {
		if b.Name != first.Name {
			rest = append(rest, b)
		}
	}
	s = service(vip, rest...)
	s.AffinityTimeout = time.Hour
	e.upsert(s)
	if r := e.client.TCP("10.96.0.10:80"); r.Err != "" || r.Name == first.Name {
		t.Errorf("after its backend left, the client got %+v", r)
	}
}

func TestRestartKeepsServiceTraffic(t *testing.T) {
	e := newEnv(t)
	bs := e.tcpBackends(2, 8080)
	if err := e.dp.Sync([]Service{service(vip, bs...)}); err != nil {
		t.Fatal(err)
	}
	e.dp.Close() // the agent stops; nothing is unpinned

	if r := e.client.TCP("10.96.0.10:80"); r.Err != "" {
		t.Fatalf("connect while no agent runs: %s", r.Err)
	}

	next := e.open()
	got, err := next.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Backends) != 2 {
		t.Fatalf("restored state = %+v", got)
	}
	if err := next.Sync([]Service{service(vip, bs...)}); err != nil {
		t.Fatal(err)
	}
	if w := next.Stats().Writes.Total(); w != 0 {
		t.Errorf("first sync after restart wrote %d entries, want 0", w)
	}
	if err := next.Attach(); err != nil {
		t.Fatal(err)
	}
	if err := next.Sync([]Service{service(vip, bs[1])}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if r := e.client.TCP("10.96.0.10:80"); r.Name != "b2" {
			t.Fatalf("after the new agent's update: %+v", r)
		}
	}
	if err := next.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if r := e.client.TCP("10.96.0.10:80"); r.Errno != "ENETUNREACH" {
		t.Errorf("after uninstall: %+v, want the untranslated ENETUNREACH", r)
	}
}

func TestAttachMovesToNewCgroup(t *testing.T) {
	e := newEnv(t)
	bs := e.tcpBackends(1, 8080)
	e.upsert(service(vip, bs...))
	e.dp.Close() // the agent restarts with another cgroup configured
	other := privtest.NewCgroup(t)
	cfg := e.cfg
	cfg.CgroupPath = other.Path
	moved, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	if err := moved.Attach(); err != nil {
		t.Fatal(err)
	}
	inOther := socktest.StartClient(t, other, e.ns)
	if r := inOther.TCP("10.96.0.10:80"); r.Name != "b1" {
		t.Errorf("client in the new cgroup: %+v", r)
	}
	if r := e.client.TCP("10.96.0.10:80"); r.Errno != "ENETUNREACH" {
		t.Errorf("client in the old cgroup: %+v, want untranslated", r)
	}
}

func TestScaleThousandServices(t *testing.T) {
	e := newEnv(t)
	bs := e.tcpBackends(10, 8080)
	var svcs []Service
	for i := range 1000 {
		fe := Frontend{Addr: netip.AddrFrom4([4]byte{10, 96, byte(1 + i/250), byte(i % 250)}), Port: 80, Proto: TCP}
		svcs = append(svcs, service(fe, bs...))
	}
	start := time.Now()
	if err := e.dp.Sync(svcs); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st := e.dp.Stats()
	t.Logf("programmed 1000 services x 10 backends in %v (%d writes, service map %d/%d entries)",
		took, st.Writes.Total(), st.SvcEntries, st.MapSize)
	if took > 10*time.Second {
		t.Errorf("programming took %v, want under 10s", took)
	}
	if st.Services != 1000 || st.Backends != 10000 || st.SvcEntries != 11000 {
		t.Errorf("stats = %+v", st)
	}

	start = time.Now()
	if err := e.dp.Sync(svcs); err != nil {
		t.Fatal(err)
	}
	t.Logf("idempotent resync took %v", time.Since(start))
	if w := e.dp.Stats().Writes.Total() - st.Writes.Total(); w != 0 {
		t.Errorf("resync of an unchanged state wrote %d entries", w)
	}

	dump, err := e.dp.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if len(dump) != 1000 || len(dump[999].Backends) != 10 {
		t.Errorf("read back %d services", len(dump))
	}
	for _, addr := range []string{"10.96.1.0:80", "10.96.2.117:80", "10.96.4.249:80"} {
		if r := e.client.TCP(addr); r.Err != "" || r.Peer != addr {
			t.Errorf("connect %s: %+v", addr, r)
		}
	}
}

func TestTwoAgentsServeOnlyTheirOwnCgroup(t *testing.T) {
	a := newEnv(t)
	bs := a.tcpBackends(2, 8080)
	a.upsert(service(vip, bs[0]))

	// A second agent on the same machine: its own cgroup and pin path,
	// the same ClusterIP programmed to another backend.
	cgB := privtest.NewCgroup(t)
	cfgB := Config{CgroupPath: cgB.Path, PinPath: filepath.Join(filepath.Dir(a.cfg.PinPath), "node-b")}
	b, err := Open(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Uninstall() })
	if err := b.Upsert(service(vip, bs[1])); err != nil {
		t.Fatal(err)
	}
	if err := b.Attach(); err != nil {
		t.Fatal(err)
	}
	clientB := socktest.StartClient(t, cgB, a.ns)
	for range 10 {
		if r := a.client.TCP("10.96.0.10:80"); r.Name != "b1" {
			t.Fatalf("node-a's pod reached %+v, want b1", r)
		}
		if r := clientB.TCP("10.96.0.10:80"); r.Name != "b2" {
			t.Fatalf("node-b's pod reached %+v, want b2", r)
		}
	}
}
