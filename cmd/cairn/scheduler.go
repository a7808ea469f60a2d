package main

import (
	"context"
	"log/slog"

	"cairn/leader"
	"cairn/scheduler"
	"cairn/scheduler/config"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// addSchedulerFlags adds the scheduler's settings, shared by `cairn
// server` and `cairn scheduler`.
func addSchedulerFlags(f *pflag.FlagSet) {
	f.String("scheduler-config", "", "YAML file of the scheduler's profile: plugins enabled/disabled, score weights, percentageOfNodesToScore, backoffs (default: Kubernetes' defaults)")
}

// schedulerLoop builds the scheduler's leader loop from its flags. The
// configuration is read once, at start, so a bad file stops the process
// with the reason instead of failing at each leadership.
func schedulerLoop(f *pflag.FlagSet, identity string, reg prometheus.Registerer, log *slog.Logger) (leader.Loop, error) {
	profile := config.Default()
	if path, _ := f.GetString("scheduler-config"); path != "" {
		var err error
		if profile, err = config.Load(path); err != nil {
			return leader.Loop{}, err
		}
	}
	// Each leadership term builds a new scheduler; it reuses the
	// collectors the previous one registered.
	return leader.Loop{Name: "scheduler", Run: func(ctx context.Context, cfg *rest.Config) error {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		s, err := scheduler.New(scheduler.Config{
			Client: client, Profile: profile, Logger: log, Identity: identity, Metrics: reg,
		})
		if err != nil {
			return err
		}
		return s.Run(ctx)
	}}, nil
}

func newSchedulerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler on its own, against the API through a kubeconfig",
		Long: `Run the scheduler outside a server. Inside ` + "`cairn server`" + ` the scheduler runs on
the Raft leader; use this command to run it elsewhere (start the servers with
--disable scheduler). Instances elect one active scheduler through a Lease and
fence its writes on it. It schedules pods whose schedulerName is
default-scheduler (or empty), so another scheduler can coexist.

  cairn scheduler --kubeconfig scheduler.kubeconfig [--scheduler-config profile.yaml]`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd)
			if err != nil {
				return err
			}
			loop, err := schedulerLoop(cmd.Flags(), "cairn-scheduler", prometheus.NewRegistry(), log.With("component", "scheduler"))
			if err != nil {
				return err
			}
			return runElected(cmd, loop)
		},
	}
	addElectionFlags(cmd.Flags(), "cairn-scheduler")
	addSchedulerFlags(cmd.Flags())
	return cmd
}
