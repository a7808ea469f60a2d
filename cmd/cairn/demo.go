package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
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
	cmd.AddCommand(newDemoServeCmd(), newDemoGetCmd())
	return cmd
}

func newDemoServeCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Answer HTTP requests with this pod's name, IP and node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			id := demoapp.IdentityFromEnv()
			fmt.Fprintf(cmd.OutOrStdout(), "serving on %s as pod %s (%s)\n", ln.Addr(), id.Pod, id.IP)
			return demoapp.Serve(ctx, ln, id)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":"+strconv.Itoa(demoapp.DefaultPort), "address to listen on")
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
	f := cmd.Flags()
	f.IntVar(&opts.Count, "count", 1, "requests to send, each on a new connection")
	f.DurationVar(&opts.Timeout, "timeout", 5*time.Second, "timeout of each attempt")
	f.DurationVar(&opts.RetryFor, "retry-for", 0, "how long to retry a failing request")
	return cmd
}
