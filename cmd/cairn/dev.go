package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"cairn/internal/devcluster"

	"github.com/spf13/cobra"
)

func newDevCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local HA cluster: 3 servers and, as root, 2 agents",
		Long: `Start a whole cluster on this machine and keep it running until Ctrl-C:
three servers (store, API, scheduler and controllers on the leader) and, as
root, two agents, each in a network namespace of its own (cairn-dev-n1,
cairn-dev-n2) joined by the bridge cairn-dev0, with the embedded runtime, the
eBPF Service proxy and gossip. Without root only the servers start.

The cluster CA is created on first use and the admin kubeconfig is written
where ` + "`cairn kubectl`" + ` looks, so that this works right away:

  cairn kubectl get nodes

The state (CA, data, logs) lives in --dir and survives restarts. Ctrl-C, or
` + "`cairn dev down`" + ` from another terminal, stops the agents, then the
servers, and removes every namespace, bridge, mount, cgroup, eBPF link and
iptables rule the cluster made.`,
		Example: `  cairn dev --demo          # as root: with the demo Deployment and Service
  cairn dev status          # members (with the leader), nodes and pods
  cairn dev logs s1 -f      # a server's or agent's log (s1-s3, n1-n2)
  cairn dev stop s2 --kill  # a drill: crash one server or agent...
  cairn dev start s2        # ...and bring it back
  cairn dev down            # stop it from another terminal`,
		Args: cobra.NoArgs,
		RunE: runDev,
	}
	cmd.PersistentFlags().String("dir", devcluster.DefaultDir(), "state directory: CA, data and logs of the cluster")
	f := cmd.Flags()
	f.Bool("demo", false, "apply a demo Deployment ("+fmt.Sprint(devcluster.DemoReplicas)+" pods of "+devcluster.DemoImage+") and its ClusterIP Service")
	f.String("write-kubeconfig", defaultKubeconfig(), "also write the admin kubeconfig here (empty: only DIR/admin.kubeconfig)")
	f.Int("port-offset", 0, "shift every loopback port (store 2379, peer 2380, metrics 2381, ...), for a cluster next to another; fixed at the first start of --dir")
	cmd.AddCommand(newDevDownCmd(), newDevStatusCmd(), newDevLogsCmd(), newDevStopCmd(), newDevStartCmd())
	return cmd
}

func runDev(cmd *cobra.Command, _ []string) error {
	log, err := newLogger(cmd)
	if err != nil {
		return err
	}
	f := cmd.Flags()
	dir, _ := f.GetString("dir")
	demo, _ := f.GetBool("demo")
	kubeconfig, _ := f.GetString("write-kubeconfig")
	level, _ := f.GetString("log-level")
	cfg := devcluster.Config{
		Dir: dir, Kubeconfig: kubeconfig, Demo: demo, LogLevel: level,
		Command: commandName(), Out: cmd.OutOrStdout(), Logger: log,
	}
	if off, _ := f.GetInt("port-offset"); f.Changed("port-offset") || off != 0 {
		cfg.PortOffset = &off
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	force := make(chan struct{})
	cfg.Force = force
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		<-sigs
		fmt.Fprintln(cmd.OutOrStdout(), "\nStopping (press Ctrl-C again to kill the processes at once)...")
		cancel()
		<-sigs
		close(force)
	}()
	return devcluster.Up(ctx, cfg)
}

// commandName is how the user ran cairn, for the commands it suggests:
// bin/cairn when run from a checkout, cairn from the PATH.
func commandName() string {
	if strings.Contains(os.Args[0], "/") {
		return os.Args[0]
	}
	return "cairn"
}

func newDevDownCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the cluster of --dir and remove what it made on the host; the data stays",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd)
			if err != nil {
				return err
			}
			dir, _ := cmd.Flags().GetString("dir")
			return devcluster.Down(cmd.Context(), devcluster.DownConfig{Dir: dir, Out: cmd.OutOrStdout(), Logger: log})
		},
	}
}

func newDevStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Print the cluster's members (with the leader), nodes and pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, _ := cmd.Flags().GetString("dir")
			return devcluster.Status(cmd.Context(), dir, cmd.OutOrStdout())
		},
	}
}

func newDevLogsCmd() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the log of a server or agent: " + strings.Join(devcluster.LogNames(), ", "),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, _ := cmd.Flags().GetString("dir")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return devcluster.Logs(ctx, dir, args[0], follow, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is appended")
	return cmd
}

func newDevStopCmd() *cobra.Command {
	var kill bool
	cmd := &cobra.Command{
		Use:   "stop NAME",
		Short: "Stop one server or agent of the running cluster (" + strings.Join(devcluster.LogNames(), ", ") + "), for a drill; the rest keeps running",
		Long: `Ask the running cluster's supervisor to stop one server or agent: with
SIGTERM, then SIGKILL after 15s, or with --kill at once, as a crash would.
The supervisor does not restart it: ` + "`cairn dev start NAME`" + ` does. A stopped
agent's pods keep running, and the agent adopts them when it starts again.`,
		Example: `  cairn dev stop s1 --kill   # crash a server: the others keep serving
  cairn dev stop n2 --kill   # crash an agent: its peer reports it, the node is NotReady within seconds
  cairn dev stop n2          # stop an agent: the node is NotReady once its Lease expires (40s)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, _ := cmd.Flags().GetString("dir")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return devcluster.Stop(ctx, dir, args[0], kill, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&kill, "kill", false, "stop with SIGKILL at once, as a crash would, instead of SIGTERM")
	return cmd
}

func newDevStartCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "start NAME",
		Short: "Start a stopped or crashed server or agent of the running cluster again and wait until it is ready",
		Long: `Ask the running cluster's supervisor to start a server or agent that
exited (stopped with ` + "`cairn dev stop`" + `, or killed) with the arguments it
first ran with, and wait until it is ready: a server's API server answers,
an agent's node is Ready. A server catches up with the others through Raft.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, _ := cmd.Flags().GetString("dir")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return devcluster.Start(ctx, dir, args[0], cmd.OutOrStdout())
		},
	}
}
