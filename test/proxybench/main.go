// Command proxybench measures what Service forwarding costs a client:
// connection setup plus one small request and response, through a
// ClusterIP with Cairn's eBPF socket load balancing, directly to a backend
// address, and through a kube-proxy style iptables DNAT rule set, side by
// side in one run. It prints p50/p99 latency, connections per second and
// the ratios between the modes.
//
// It needs root: it creates network namespaces joined by veth pairs, a
// cgroup, a private bpffs mount and iptables rules inside its own client
// namespace, and removes all of them when it ends, also on failure or
// Ctrl-C. Traffic never leaves those namespaces.
//
//	go run ./test/proxybench [-services 1000] [-endpoints 10] [-conns 250] [-rounds 40]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// options are the command-line settings.
type options struct {
	services    int
	endpoints   int
	conns       int
	rounds      int
	warmup      int
	concurrency int
	restore     string
}

// The modes, in the order they are printed.
const (
	modeDirect   = "direct"
	modeEBPF     = "ebpf"
	modeIptables = "iptables"
)

func main() {
	if os.Getenv(envChild) == "1" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "proxybench client:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.IntVar(&o.services, "services", 1000, "ClusterIP services to program, in the eBPF maps and as iptables rules")
	flag.IntVar(&o.endpoints, "endpoints", 10, "endpoints per service (backend addresses in the server namespace)")
	flag.IntVar(&o.conns, "conns", 250, "measured connections per mode per round")
	flag.IntVar(&o.rounds, "rounds", 40, "rounds; short rounds with the order of the modes rotating spread drift in machine load evenly over the modes")
	flag.IntVar(&o.warmup, "warmup", 300, "unmeasured connections per client worker before measuring")
	flag.IntVar(&o.concurrency, "concurrency", 1, "client workers making connections at the same time")
	flag.StringVar(&o.restore, "iptables-restore", "iptables-restore", "iptables-restore binary (e.g. iptables-legacy-restore)")
	flag.Parse()
	if err := bench(o); err != nil {
		fmt.Fprintln(os.Stderr, "proxybench:", err)
		os.Exit(1)
	}
}

func bench(o options) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root: it creates network namespaces, a cgroup, BPF programs and iptables rules")
	}
	if o.services < 1 || o.endpoints < 1 || o.conns < 1 || o.rounds < 1 {
		return errors.New("-services, -endpoints, -conns and -rounds must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cleanup cleanups
	defer cleanup.run()

	reapStale()
	prefix := fmt.Sprintf("%s%d", benchPrefix, os.Getpid())
	topo, err := newTopology(prefix, o.endpoints, &cleanup)
	if err != nil {
		return err
	}
	ln, err := serve(nsPath(topo.server), backendPort)
	if err != nil {
		return fmt.Errorf("start backends: %w", err)
	}
	cleanup.add("stop backends", ln.Close)

	svcs := benchServices(o.services, topo.backends)
	eb, err := setupEBPF(prefix, svcs, &cleanup)
	if err != nil {
		return fmt.Errorf("eBPF datapath: %w", err)
	}
	rules := kubeProxyRules(svcs, netip.MustParsePrefix(clusterCIDR))
	start := time.Now()
	if err := runInput([]byte(rules), "ip", "netns", "exec", topo.iptables, o.restore); err != nil {
		return fmt.Errorf("install iptables rules: %w", err)
	}
	restoreTook := time.Since(start)
	cleanup.add("flush iptables rules", func() error {
		return flushRules(topo.iptables, strings.TrimSuffix(o.restore, "-restore"))
	})

	vips := make([]string, len(svcs))
	for i, s := range svcs {
		vips[i] = netip.AddrPortFrom(s.vip, s.port).String()
	}
	var direct []string
	for _, b := range topo.backends {
		direct = append(direct, netip.AddrPortFrom(b, backendPort).String())
	}
	type modeSetup struct {
		netns, cgroup string
		targets       []string
	}
	modes := map[string]modeSetup{
		modeDirect:   {netns: topo.plain, targets: direct},
		modeEBPF:     {netns: topo.plain, cgroup: eb.cgroup, targets: vips},
		modeIptables: {netns: topo.iptables, targets: vips},
	}
	order := []string{modeDirect, modeEBPF, modeIptables}
	results := map[string]*result{}
	for _, m := range order {
		results[m] = &result{mode: m}
	}

	fmt.Printf("proxybench: %d ClusterIP services x %d endpoints; %d rounds x %d connections per mode, concurrency %d\n",
		o.services, o.endpoints, o.rounds, o.conns, o.concurrency)
	fmt.Printf("setup: eBPF maps programmed in %v (%d writes, %d entries); %d iptables rules restored in %v (%s)\n",
		eb.took.Round(time.Millisecond), eb.writes, eb.entries, strings.Count(rules, "\n-A "), restoreTook.Round(time.Millisecond), iptablesVersion(o.restore))

	for round := range o.rounds {
		for i := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m := order[(i+round)%len(order)]
			s := modes[m]
			spec := childSpec{
				Netns: nsPath(s.netns), Targets: s.targets, Conns: o.conns,
				Warmup: o.warmup, Concurrency: o.concurrency, Seed: uint64(round*10 + i + 1),
			}
			smp, err := measure(ctx, spec, s.cgroup)
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			if smp.Failures > 0 {
				fmt.Fprintf(os.Stderr, "proxybench: %s: %d failed connections, first: %s\n", m, smp.Failures, smp.FirstError)
			}
			results[m].add(smp)
		}
	}
	report(os.Stdout, order, results)

	probe := childSpec{Netns: nsPath(topo.plain), Targets: vips, Conns: 2000, Concurrency: 1, Seed: 99}
	if cost, err := programCost(ctx, eb, probe); err != nil {
		fmt.Fprintf(os.Stderr, "proxybench: program cost not measured: %v\n", err)
	} else {
		fmt.Printf("eBPF connect4 program: %v per connection (kernel-accounted over %d runs)\n", cost.PerRun(), cost.Runs)
	}
	return nil
}

// benchServices gives service i the cluster IP 10.97.x.y and every
// backend as its endpoints, as when many services select the same pods.
func benchServices(n int, backends []netip.Addr) []benchService {
	var eps []netip.AddrPort
	for _, b := range backends {
		eps = append(eps, netip.AddrPortFrom(b, backendPort))
	}
	svcs := make([]benchService, n)
	for i := range svcs {
		svcs[i] = benchService{
			name:      fmt.Sprintf("bench/svc-%d:http", i),
			vip:       netip.AddrFrom4([4]byte{10, 97, byte(i >> 8), byte(i)}),
			port:      80,
			endpoints: eps,
		}
	}
	return svcs
}

// measure runs one client process, inside cgroup when it is not empty.
func measure(ctx context.Context, spec childSpec, cgroup string) (sample, error) {
	var smp sample
	in, err := json.Marshal(spec)
	if err != nil {
		return smp, err
	}
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	// No asynchronous preemption signals: they would interrupt the
	// blocking calls being timed.
	cmd.Env = append(os.Environ(), envChild+"=1", "GODEBUG=asyncpreemptoff=1")
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if cgroup != "" {
		dir, err := os.Open(cgroup)
		if err != nil {
			return smp, err
		}
		defer dir.Close()
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	}
	if err := cmd.Run(); err != nil {
		return smp, fmt.Errorf("client: %w", err)
	}
	err = json.Unmarshal(out.Bytes(), &smp)
	return smp, err
}

func flushRules(netns, iptables string) error {
	if err := run("ip", "netns", "exec", netns, iptables, "-t", "nat", "-F"); err != nil {
		return err
	}
	return run("ip", "netns", "exec", netns, iptables, "-t", "nat", "-X")
}

func iptablesVersion(restore string) string {
	out, err := exec.Command(strings.TrimSuffix(restore, "-restore"), "-V").Output()
	if err != nil {
		return "version unknown"
	}
	return strings.TrimSpace(string(out))
}

func report(w *os.File, order []string, results map[string]*result) {
	sums := map[string]summary{}
	for _, m := range order {
		sums[m] = summarize(results[m])
	}
	d := sums[modeDirect]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tconns\tfailed\tp50\tp99\tconn/s\tp50 vs direct\tp99 vs direct\t")
	for _, m := range order {
		s := sums[m]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%.0f\t%s\t%s\t\n", s.mode, s.conns, s.failures, us(s.p50), us(s.p99), s.perSecond, ratio(s.p50, d.p50), ratio(s.p99, d.p99))
	}
	tw.Flush()

	e, ipt := sums[modeEBPF], sums[modeIptables]
	within := float64(e.p50)/float64(d.p50) <= 1.05
	fmt.Fprintf(w, "\neBPF vs direct: p50 %s, p99 %s, conn/s %s (target: p50 within 5%%: %s)\n",
		pct(e.p50, d.p50), pct(e.p99, d.p99), pctRate(e.perSecond, d.perSecond), verdict(within))
	ahead := e.p50 < ipt.p50
	fmt.Fprintf(w, "eBPF vs iptables: p50 %s of iptables, p99 %s, conn/s %.3fx (target: ahead of iptables: %s)\n",
		ratio(e.p50, ipt.p50), ratio(e.p99, ipt.p99), e.perSecond/ipt.perSecond, verdict(ahead))
}

func pct(a, b time.Duration) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", (float64(a)/float64(b)-1)*100)
}

func pctRate(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", (a/b-1)*100)
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
