// Command apibench starts a real 3-replica cairn cluster on loopback (TLS,
// the Kubernetes API on every replica, scheduler and controllers off), runs
// the API benchmark of `cairn bench api` against all three API servers and
// prints its figures with the targets, each met or missed. It is a report,
// not a test: it exits non-zero only when the cluster or the benchmark
// fails to run, or a server crashes. Run it from the repository root after
// make build (make bench does).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"cairn/internal/apibench"
)

// options are the harness's command-line settings.
type options struct {
	cairnBin    string
	pods        int
	clients     int
	watchers    int
	lists       int
	contentType string
	jsonOut     string
	keep        bool
}

func main() {
	var o options
	flag.StringVar(&o.cairnBin, "cairn", "bin/cairn", "cairn binary (make build)")
	flag.IntVar(&o.pods, "pods", apibench.DefaultPods, "pods to create")
	flag.IntVar(&o.clients, "clients", apibench.DefaultClients, "concurrent clients")
	flag.IntVar(&o.watchers, "watchers", apibench.DefaultWatchers, "concurrent watches in the fan-out measurement")
	flag.IntVar(&o.lists, "lists", apibench.DefaultLists, "times the namespace is listed, whole and in pages")
	flag.StringVar(&o.contentType, "content-type", apibench.ContentTypeProtobuf, "encoding the clients speak: protobuf or json")
	flag.StringVar(&o.jsonOut, "json", "", "also write the report as JSON to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the data dirs and logs instead of deleting them")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if _, err := run(ctx, o, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "apibench:", err)
		stop()
		os.Exit(1)
	}
}

// run starts the cluster, measures it, prints the report to out and stops
// the cluster, whatever happens.
func run(ctx context.Context, o options, out io.Writer, log *slog.Logger) (*apibench.Report, error) {
	dir, err := os.MkdirTemp("", "apibench-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		log.Info("keeping data dirs and logs", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	c, err := newCluster(o.cairnBin, dir, 3, log)
	if err != nil {
		return nil, err
	}
	log.Info("starting cluster", "binary", o.cairnBin)
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	defer c.stop()
	cfg := apibench.Config{
		Kubeconfig:  c.kubeconfig(),
		Pods:        o.pods,
		Clients:     o.clients,
		Watchers:    o.watchers,
		Lists:       o.lists,
		ContentType: o.contentType,
		Logger:      log,
	}
	for _, m := range c.members {
		cfg.Servers = append(cfg.Servers, m.apiURL())
		cfg.MetricsURLs = append(cfg.MetricsURLs, m.metricsURL())
	}
	rep, err := apibench.Run(ctx, cfg)
	// A server that died during the run makes its figures meaningless.
	err = errors.Join(err, c.exited())
	if rep != nil {
		fmt.Fprintf(out, "\n== cairn API server: %d replicas on loopback, TLS, scheduler and controllers off ==\n", len(c.members))
		err = errors.Join(err, rep.WriteTable(out))
		if o.jsonOut != "" {
			err = errors.Join(err, writeJSON(o.jsonOut, rep))
		}
	}
	return rep, err
}

func writeJSON(path string, rep *apibench.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
