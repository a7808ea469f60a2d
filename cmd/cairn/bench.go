package main

import (
	"fmt"
	"log/slog"
	"strings"

	"cairn/internal/storebench"

	"github.com/spf13/cobra"
)

// newBenchCmd groups the benchmarks that measure a running cluster.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark a running cluster",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchStoreCmd())
	return cmd
}

func newBenchStoreCmd() *cobra.Command {
	var (
		cfg               storebench.Config
		workload          string
		caFile, cert, key string
		asJSON            bool
	)
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Measure any etcd v3 API cluster: put and get throughput and latency, and writes across a leader kill",
		Long: `Measure any cluster that speaks the etcd v3 API (Cairn's store or etcd itself)
through the official etcd client.

Workloads:
  put       put throughput and latency with --clients clients, then with one client
  get       linearizable and serializable get throughput and latency
  failover  writers run continuously while the leader is killed with --kill-command;
            reports the longest gap between acknowledged writes and checks that
            every acknowledged write can still be read from the survivors
  all       put, get, then failover if --kill-command is set

In --kill-command, {member} is replaced by the leader's member name and
{endpoint} by its client URL. Every benchmark key lives under /storebench/ and
is deleted at the end.`,
		Example: `  cairn bench store --endpoints 127.0.0.1:2379 --cacert ca.crt --cert client.crt --key client.key
  cairn bench store --insecure --endpoints http://127.0.0.1:2379,http://127.0.0.1:12379,http://127.0.0.1:22379 \
    --workload failover --kill-command 'kill -9 $(cat /tmp/x/{member}.pid)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Workload = storebench.Workload(workload)
			if !cfg.Insecure {
				tlsCfg, err := storebench.TLSConfig(caFile, cert, key)
				if err != nil {
					return err
				}
				cfg.TLS = tlsCfg
			}
			cfg.Logger = benchLogger(cmd)
			rep, err := storebench.Run(cmd.Context(), cfg)
			if rep != nil {
				out := cmd.OutOrStdout()
				if asJSON {
					if jerr := rep.WriteJSON(out); jerr != nil && err == nil {
						err = jerr
					}
				} else if terr := rep.WriteTable(out); terr != nil && err == nil {
					err = terr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.Endpoints, "endpoints", []string{"127.0.0.1:2379"}, "client URLs of every member, comma-separated")
	f.StringVar(&caFile, "cacert", "", "CA certificate that verifies the servers (PEM); the system roots when empty")
	f.StringVar(&cert, "cert", "", "client certificate (PEM)")
	f.StringVar(&key, "key", "", "client private key (PEM)")
	f.BoolVar(&cfg.Insecure, "insecure", false, "talk plain-text gRPC, without TLS")
	f.StringVar(&workload, "workload", string(storebench.WorkloadAll), "what to measure: put, get, failover or all")
	f.IntVar(&cfg.Clients, "clients", storebench.DefaultClients, "concurrent clients for the multi-client measurements and failover writers")
	f.IntVar(&cfg.Conns, "conns", storebench.DefaultConns, "gRPC connections shared by the clients")
	f.IntVar(&cfg.Total, "total", 0, "requests per measurement; when 0, each measurement runs for --duration (failover always runs by time)")
	f.DurationVar(&cfg.Duration, "duration", storebench.DefaultDuration, "length of each measurement, and of the failover run after the kill")
	f.IntVar(&cfg.KeySize, "key-size", storebench.DefaultKeySize, "key length in bytes")
	f.IntVar(&cfg.ValueSize, "value-size", storebench.DefaultValueSize, "value length in bytes")
	f.IntVar(&cfg.Keyspace, "keyspace", storebench.DefaultKeyspace, "number of distinct keys put and get spread over")
	f.StringVar(&cfg.KillCommand, "kill-command", "", "shell command that kills the leader; {member} and {endpoint} are replaced")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", storebench.DefaultWriteTimeout, "per-write timeout in the failover workload, after which the writer moves on")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// benchLogger sends progress to standard error, honouring the root command's
// --log-level and --log-format when they are there.
func benchLogger(cmd *cobra.Command) *slog.Logger {
	level := slog.LevelInfo
	if s, err := cmd.Flags().GetString("log-level"); err == nil {
		if uerr := level.UnmarshalText([]byte(s)); uerr != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: unknown --log-level %q, using info\n", s)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	if s, err := cmd.Flags().GetString("log-format"); err == nil && strings.EqualFold(s, "json") {
		return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), opts))
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), opts))
}
