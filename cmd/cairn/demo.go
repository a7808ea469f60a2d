package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	"cairn/internal/devcluster/demoapp"

	"github.com/spf13/cobra"
)

// newDemoHTTPCmd is the program of `cairn dev`'s demo image, hidden from
// help: the image's root filesystem is this binary.
func newDemoHTTPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "__demo-http",
		Short:  "The demo image's HTTP server and client",
		Hidden: true,
		Args:   cobra.NoArgs,
	}
	cmd.AddCommand(newDemoServeCmd(), newDemoGetCmd(), newDemoWhoAmICmd(), newDemoPSCmd())
	return cmd
}

func newDemoServeCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Answer HTTP requests with this pod's name, IP and node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return demoapp.ListenAndServe(ctx, listen, cmd.OutOrStdout())
		},
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	demoapp.ServeFlags(fs, &listen)
	cmd.Flags().AddGoFlagSet(fs)
	return cmd
}

func newDemoGetCmd() *cobra.Command {
	var opts demoapp.GetOptions
	cmd := &cobra.Command{
		Use:   "get URL",
		Short: "Print the answers to GET requests, one connection each",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return demoapp.Get(cmd.Context(), args[0], opts, cmd.OutOrStdout())
		},
	}
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	demoapp.GetFlags(fs, &opts)
	cmd.Flags().AddGoFlagSet(fs)
	return cmd
}

func newDemoWhoAmICmd() *cobra.Command {
	var retryFor time.Duration
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Print who the pod's service account token identifies, asking the API server in-cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demoapp.WhoAmI(cmd.Context(), demoapp.ServiceAccountDir, retryFor, cmd.OutOrStdout())
		},
	}
	cmd.Flags().DurationVar(&retryFor, "retry-for", 30*time.Second, "how long to retry a failing request")
	return cmd
}

func newDemoPSCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ps",
		Short: "List the processes this container sees, e.g. from kubectl debug --target",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demoapp.PS("/proc", cmd.OutOrStdout())
		},
	}
}
