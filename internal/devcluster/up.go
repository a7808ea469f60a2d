package devcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"cairn/internal/kubeconfig"
	"cairn/internal/pki"

	"k8s.io/client-go/kubernetes"
)

// Timeouts of the start.
const (
	serversReadyTimeout = 60 * time.Second
	nodesReadyTimeout   = 2 * time.Minute
	stopGrace           = 15 * time.Second
)

// supervisor runs one cluster: its children, and what it made on the
// host.
type supervisor struct {
	cfg   Config
	l     Layout
	topo  Topology
	state *RunState
	// cgroup2 is the cgroup v2 mount point; proxyMode the agents'
	// --proxy.
	cgroup2, proxyMode string

	mu      sync.Mutex
	servers []*child
	agents  []*child
}

// Up starts the cluster in cfg.Dir and keeps it running until ctx ends,
// then stops the agents, then the servers, and removes everything it
// made on the host. The state directory stays: the next Up finds the
// cluster's data as it was.
func Up(ctx context.Context, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	s := &supervisor{cfg: cfg, l: Layout{Dir: cfg.Dir}}
	return s.run(ctx)
}

func (s *supervisor) out(format string, args ...any) { fmt.Fprintf(s.cfg.Out, format, args...) }

func (s *supervisor) run(ctx context.Context) error {
	if err := os.MkdirAll(s.l.Logs(), 0o700); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	dirLock, err := tryLock(s.l.Lock(), s.l.Dir)
	var locked *errLocked
	if errors.As(err, &locked) {
		return fmt.Errorf("devcluster: a cluster already runs in %s (pid %d): see `%s dev status`, or stop it with `%s dev down`",
			s.l.Dir, locked.holder.PID, s.cfg.Command, s.cfg.Command)
	}
	if err != nil {
		return err
	}
	defer dirLock.Close()
	reason := nodesUnavailable()
	if reason == "" {
		machine, err := tryLock(machineLock, s.l.Dir)
		if errors.As(err, &locked) {
			return fmt.Errorf("devcluster: another cairn dev cluster runs on this machine (pid %d, state in %s): stop it with `%s dev down --dir %s`",
				locked.holder.PID, locked.holder.Dir, s.cfg.Command, locked.holder.Dir)
		}
		if err != nil {
			return err
		}
		defer machine.Close()
	}
	if prev, _ := ReadRunState(s.l.Dir); prev != nil {
		s.out("Cleaning up after a previous run that did not stop cleanly...\n")
		stopOrphans(prev.Processes, stopGrace)
		if err := restoreIPForward(prev.IPForwardWas); err != nil {
			s.cfg.Logger.Warn("restoring IP forwarding", "err", err)
		}
		sweep(s.l, false, s.cfg.Logger)
	}
	settings, err := resolveSettings(s.l, s.cfg.PortOffset)
	if err != nil {
		return err
	}
	s.topo = NewTopology(settings.PortOffset, reason == "")
	if err := ensurePKI(s.l.PKI()); err != nil {
		return err
	}
	s.state = &RunState{
		PID: os.Getpid(), StartTime: startTimeOf(os.Getpid()), Dir: s.l.Dir, Started: time.Now().UTC(),
		Nodes: reason == "", NoNodesReason: reason, PortOffset: settings.PortOffset,
	}
	if err := s.saveState(); err != nil {
		return err
	}
	defer s.shutdown()
	if err := s.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cs, err := s.serveControl()
	if err != nil {
		// The cluster runs all the same, without start and stop.
		s.out("%v\n", err)
	} else {
		defer cs.close()
	}
	<-ctx.Done()
	return nil
}

// start brings the cluster up: the host's network, the servers, the
// admin kubeconfig, the agents and the demo.
func (s *supervisor) start(ctx context.Context) error {
	if s.state.Nodes {
		if err := s.prepareHost(ctx); err != nil {
			return err
		}
	} else {
		s.out("Starting the servers only: %s.\nAgents need root: network namespaces, a bridge, cgroups and eBPF. Run `sudo %s dev` for the whole cluster.\n",
			s.state.NoNodesReason, s.cfg.Command)
	}
	if err := s.startServers(ctx); err != nil {
		return err
	}
	if err := s.writeKubeconfigs(); err != nil {
		return err
	}
	if s.state.Nodes {
		if err := s.startAgents(ctx); err != nil {
			return err
		}
	}
	var clusterIP string
	if s.cfg.Demo {
		clients, err := newAPIClients(s.l.Dir, s.topo)
		if err != nil {
			return err
		}
		err = clients.do(ctx, func(c kubernetes.Interface) error {
			var err error
			clusterIP, err = applyDemo(ctx, c)
			return err
		})
		if err != nil {
			return err
		}
		s.out("Demo applied: Deployment %s/%s (%d replicas) and Service %s at %s:%d.\n",
			DemoNamespace, DemoName, DemoReplicas, DemoName, clusterIP, DemoServicePort)
	}
	s.printSummary(clusterIP)
	return nil
}

// ensurePKI creates the cluster CA on first use.
func ensurePKI(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, pki.CACertFile)); err == nil {
		return nil
	}
	return pki.Init(dir)
}

// writeKubeconfigs writes the admin kubeconfig, pointing at the first
// server, into the state directory and where the user asked.
func (s *supervisor) writeKubeconfigs() error {
	ca, err := pki.LoadCA(s.l.PKI())
	if err != nil {
		return err
	}
	b, err := kubeconfig.Build(ca, kubeconfig.Options{
		Servers: []string{s.topo.Servers[0].APIURL()}, User: pki.AdminCommonName, Groups: []string{pki.AdminOrganization},
	})
	if err != nil {
		return err
	}
	for _, p := range []string{s.l.Kubeconfig(), s.cfg.Kubeconfig} {
		if p == "" {
			continue
		}
		if err := kubeconfig.WriteFile(p, b); err != nil {
			return fmt.Errorf("devcluster: writing %s: %w", p, err)
		}
	}
	return nil
}

// saveState records the children in the run state file.
func (s *supervisor) saveState() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.Processes = s.state.Processes[:0]
	for _, c := range append(append([]*child{}, s.servers...), s.agents...) {
		s.state.Processes = append(s.state.Processes, c.process())
	}
	return s.state.write()
}

// childExited tells the user about a child that exited on its own: it
// is not restarted until `cairn dev start` asks.
func (s *supervisor) childExited(c *child) {
	s.out("\n%s exited (%s) and is not restarted; its log: %s\n`%s dev start %s` starts it again.\n",
		c.name, c.exitStatus(), c.log, s.cfg.Command, c.name)
}

// waitServerReady waits until the API server of srv, run by c, answers
// ready.
func (s *supervisor) waitServerReady(ctx context.Context, c *child, srv Server) error {
	client, err := kubernetes.NewForConfig(AdminConfig(s.l.Dir, srv.APIURL()))
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	return s.waitFor(ctx, serversReadyTimeout, []*child{c}, srv.Name+"'s API server to be ready", func() bool {
		return ready(ctx, client)
	})
}

// shutdown stops the agents, then the servers, and sweeps the host.
func (s *supervisor) shutdown() {
	s.mu.Lock()
	agents, servers := s.agents, s.servers
	s.mu.Unlock()
	if len(agents) > 0 {
		s.out("Stopping the agents...\n")
		stopChildren(agents, stopGrace, s.cfg.Force, s.cfg.Out)
	}
	if len(servers) > 0 {
		s.out("Stopping the servers...\n")
		stopChildren(servers, stopGrace, s.cfg.Force, s.cfg.Out)
	}
	if s.state.Nodes {
		s.out("Removing the pods, namespaces, bridge, cgroups, mounts and eBPF links...\n")
	}
	if err := sweep(s.l, s.state.Nodes, s.cfg.Logger); err != nil {
		s.out("Some things could not be removed (`%s dev down` tries again): %v\n", s.cfg.Command, err)
	}
	if err := restoreIPForward(s.state.IPForwardWas); err != nil {
		s.out("%v\n", err)
	}
	os.Remove(s.l.RunState())
	s.out("Stopped. The data stays in %s: `%s dev` starts the cluster again; remove the directory to start over.\n", s.l.Dir, s.cfg.Command)
}

// stopOrphans stops the children a supervisor that died left running:
// the agents, then the servers, each with SIGTERM and, after grace,
// SIGKILL.
func stopOrphans(procs []Process, grace time.Duration) {
	for _, kind := range []string{KindAgent, KindServer} {
		var group []Process
		for _, p := range procs {
			if p.Kind == kind && p.Running() {
				group = append(group, p)
				syscall.Kill(p.PID, syscall.SIGTERM)
			}
		}
		deadline := time.Now().Add(grace)
		for _, p := range group {
			for p.Running() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if p.Running() {
				syscall.Kill(p.PID, syscall.SIGKILL)
			}
		}
		for _, p := range group {
			for p.Running() && time.Now().Before(deadline.Add(sweepTimeout)) {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}
