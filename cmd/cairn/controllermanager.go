package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"cairn/controllers"
	"cairn/controllers/all"
	"cairn/leader"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// addControllerFlags adds the controller manager's settings, shared by
// `cairn server` and `cairn controller-manager`.
func addControllerFlags(f *pflag.FlagSet) {
	d := controllers.DefaultOptions()
	f.StringSlice("controllers", []string{"*"}, "controllers to run: * for all, -NAME to leave one out (e.g. *,-podgc)")
	f.Int("concurrent-syncs", d.Workers, "objects each controller syncs at once")
	f.Duration("node-monitor-grace-period", d.NodeMonitorGracePeriod, "how long a node's Lease may go unrenewed before it is marked NotReady")
	f.Float64("node-eviction-rate", d.NodeEvictionRate, "nodes per second whose pods may be evicted")
	f.String("cluster-cidr", d.ClusterCIDR, "range nodes' podCIDRs are allocated from")
	f.Int("node-cidr-mask-size", d.NodeCIDRMaskSize, "prefix length of each node's podCIDR")
	f.Int("terminated-pod-gc-threshold", d.TerminatedPodGCThreshold, "terminated pods kept before the oldest are deleted")
}

// controllerManager builds the controller manager from its flags.
func controllerManager(f *pflag.FlagSet) (*controllers.Manager, error) {
	opts := controllers.DefaultOptions()
	opts.Workers, _ = f.GetInt("concurrent-syncs")
	opts.NodeMonitorGracePeriod, _ = f.GetDuration("node-monitor-grace-period")
	opts.NodeEvictionRate, _ = f.GetFloat64("node-eviction-rate")
	opts.ClusterCIDR, _ = f.GetString("cluster-cidr")
	opts.NodeCIDRMaskSize, _ = f.GetInt("node-cidr-mask-size")
	opts.TerminatedPodGCThreshold, _ = f.GetInt("terminated-pod-gc-threshold")
	if opts.Workers <= 0 {
		return nil, fmt.Errorf("--concurrent-syncs %d: must be at least 1", opts.Workers)
	}
	if opts.NodeMonitorGracePeriod <= 0 {
		return nil, errors.New("--node-monitor-grace-period must be positive")
	}
	selected, _ := f.GetStringSlice("controllers")
	descs := all.Descriptors()
	disabled, err := disabledControllers(selected, descs)
	if err != nil {
		return nil, err
	}
	return &controllers.Manager{Descriptors: descs, Disabled: disabled, Options: opts}, nil
}

// disabledControllers reads --controllers the way kube-controller-manager
// does: "*" enables all, "NAME" one, "-NAME" disables one.
func disabledControllers(selected []string, descs []controllers.Descriptor) ([]string, error) {
	var names []string
	for _, d := range descs {
		names = append(names, d.Name)
	}
	star := false
	on, off := map[string]bool{}, map[string]bool{}
	for _, s := range selected {
		name := strings.TrimPrefix(s, "-")
		switch {
		case s == "*":
			star = true
			continue
		case !slices.Contains(names, name):
			return nil, fmt.Errorf("--controllers %q: unknown controller (known: %s)", s, strings.Join(names, ", "))
		case strings.HasPrefix(s, "-"):
			off[name] = true
		default:
			on[name] = true
		}
	}
	var disabled []string
	for _, n := range names {
		if off[n] || (!star && !on[n]) {
			disabled = append(disabled, n)
		}
	}
	return disabled, nil
}

// addElectionFlags adds the Lease-election flags of a component run on
// its own.
func addElectionFlags(f *pflag.FlagSet, lease string) {
	f.String("kubeconfig", "", "kubeconfig of the API server(s) to use (required)")
	f.Bool("leader-elect", true, "elect one active instance through a Lease; writes are fenced on it")
	f.String("leader-elect-resource-namespace", "kube-system", "namespace of the election Lease")
	f.String("leader-elect-resource-name", lease, "name of the election Lease")
	f.Duration("leader-elect-lease-duration", 15*time.Second, "how long a Lease holder keeps it without renewing")
	f.Duration("leader-elect-renew-deadline", 10*time.Second, "how long the holder keeps trying to renew before it gives up")
	f.Duration("leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew")
}

// runElected runs loop against --kubeconfig, under a Lease election
// unless --leader-elect=false, until SIGINT or SIGTERM.
func runElected(cmd *cobra.Command, loop leader.Loop) error {
	f := cmd.Flags()
	log, err := newLogger(cmd)
	if err != nil {
		return err
	}
	path, _ := f.GetString("kubeconfig")
	if path == "" {
		return errors.New("--kubeconfig is required: e.g. one from `cairn kubeconfig --user system:kube-controller-manager` (or `--user system:kube-scheduler`), users the default roles cover")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if elect, _ := f.GetBool("leader-elect"); !elect {
		log.Warn("running without leader election (--leader-elect=false): writes are not fenced")
		return loop.Run(ctx, cfg)
	}
	host, _ := os.Hostname()
	identity := fmt.Sprintf("%s_%d", host, os.Getpid())
	str := func(n string) string { v, _ := f.GetString(n); return v }
	dur := func(n string) time.Duration { v, _ := f.GetDuration(n); return v }
	e := &leader.LeaseElector{
		Config: cfg, Namespace: str("leader-elect-resource-namespace"), Name: str("leader-elect-resource-name"),
		Identity: identity, LeaseDuration: dur("leader-elect-lease-duration"), RenewDeadline: dur("leader-elect-renew-deadline"),
		RetryPeriod: dur("leader-elect-retry-period"), Loops: []leader.Loop{loop}, Logger: log,
	}
	log.Info("campaigning for leadership", "lease", e.Namespace+"/"+e.Name, "identity", identity)
	return e.Run(ctx)
}

func newControllerManagerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers on their own, against the API through a kubeconfig",
		Long: `Run the controller manager outside a server. Inside ` + "`cairn server`" + ` the controllers
run on the Raft leader; use this command to run them elsewhere (start the
servers with --disable controllers). Instances elect one active manager
through a Lease and fence its writes on it.

  cairn controller-manager --kubeconfig controller-manager.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd)
			if err != nil {
				return err
			}
			m, err := controllerManager(cmd.Flags())
			if err != nil {
				return err
			}
			m.Logger = log
			return runElected(cmd, leader.Loop{Name: "controllers", Run: m.Run})
		},
	}
	addElectionFlags(cmd.Flags(), "cairn-controller-manager")
	addControllerFlags(cmd.Flags())
	return cmd
}
