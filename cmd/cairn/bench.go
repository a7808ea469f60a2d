package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"cairn/internal/apibench"
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
	cmd.AddCommand(newBenchStoreCmd(), newBenchAPICmd())
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

func newBenchAPICmd() *cobra.Command {
	var (
		cfg    apibench.Config
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Measure Kubernetes API servers: pod create, get, list and watch fan-out latency, and server memory",
		Long: `Measure any Kubernetes API server (Cairn's or another) through client-go.

Creates --pods pods in --namespace with --clients concurrent clients spread over
--servers; then gets random pods, lists the namespace --lists times in one
response and in pages of --page-size (as kubectl does), opens --watchers
watches and times how long one new pod takes to reach all of them. Each
server's resident memory is sampled throughout from its metrics endpoint
(--metrics-urls, e.g. cairn server --metrics-listen) or, on this machine,
from /proc (--server-pids). The report judges every figure against the
targets: p99 of create, get and list <= 1s, watch fan-out <= 1s, RSS <= 500 MiB.

At the end one deletecollection deletes every pod in --namespace (use a
namespace of the benchmark's own) unless --keep is set; each run's pods carry
the label ` + apibench.RunLabel + `=<run>.`,
		Example: `  cairn bench api --kubeconfig DATA/admin.kubeconfig \
    --servers https://127.0.0.1:6443,https://127.0.0.1:16443,https://127.0.0.1:26443 \
    --metrics-urls http://127.0.0.1:9090,http://127.0.0.1:19090,http://127.0.0.1:29090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Kubeconfig == "" {
				if cfg.Kubeconfig = os.Getenv("KUBECONFIG"); cfg.Kubeconfig == "" {
					cfg.Kubeconfig = defaultKubeconfig()
				}
			}
			cfg.Logger = benchLogger(cmd)
			rep, err := apibench.Run(cmd.Context(), cfg)
			if rep != nil {
				err = errors.Join(err, writeBenchReport(cmd.OutOrStdout(), rep, asJSON))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig with the cluster's CA and credentials (default $KUBECONFIG, else ~/.cairn/admin.kubeconfig)")
	f.StringSliceVar(&cfg.Servers, "servers", nil, "API server URLs to spread clients and watchers over, comma-separated (default: the kubeconfig's server)")
	f.StringVar(&cfg.Namespace, "namespace", apibench.DefaultNamespace, "namespace for the benchmark's pods; created when missing")
	f.IntVar(&cfg.Pods, "pods", apibench.DefaultPods, "pods to create")
	f.IntVar(&cfg.Clients, "clients", apibench.DefaultClients, "concurrent clients for creates and gets")
	f.IntVar(&cfg.Gets, "gets", 0, "gets of random pods (default: --pods)")
	f.IntVar(&cfg.Lists, "lists", apibench.DefaultLists, "times the namespace is listed, in one response and in pages")
	f.Int64Var(&cfg.PageSize, "page-size", apibench.DefaultPageSize, "limit of each page of the paginated list")
	f.IntVar(&cfg.Watchers, "watchers", apibench.DefaultWatchers, "concurrent watches that wait for one change; negative skips the measurement")
	f.StringVar(&cfg.ContentType, "content-type", apibench.ContentTypeProtobuf, "encoding the clients speak: protobuf (as controllers) or json (as kubectl)")
	f.Float32Var(&cfg.QPS, "qps", apibench.DefaultQPS, "client-side rate limit of each client, high enough not to throttle")
	f.IntVar(&cfg.Burst, "burst", apibench.DefaultBurst, "client-side burst of each client")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", apibench.DefaultRequestTimeout, "bound on each request")
	f.DurationVar(&cfg.WatchTimeout, "watch-timeout", apibench.DefaultWatchTimeout, "how long to wait for every watcher to see the change")
	f.StringSliceVar(&cfg.MetricsURLs, "metrics-urls", nil, "servers' Prometheus endpoints for process_resident_memory_bytes, comma-separated")
	f.IntSliceVar(&cfg.ServerPIDs, "server-pids", nil, "server process IDs on this machine, read from /proc when --metrics-urls is not given")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the pods instead of deleting them at the end")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// writeBenchReport prints a benchmark report as a table or as JSON.
func writeBenchReport(w io.Writer, rep interface {
	WriteJSON(io.Writer) error
	WriteTable(io.Writer) error
}, asJSON bool) error {
	if asJSON {
		return rep.WriteJSON(w)
	}
	return rep.WriteTable(w)
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
