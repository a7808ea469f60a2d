// Command gossiploss runs the gossip loss harness (package lossbench): a
// cluster of agents' memberlist members on a lossy network namespace,
// watched for false deaths, with members killed to time their detection.
// It needs root.
//
//	go run ./node/gossip/lossbench/gossiploss -members 5 -loss 0.1 -period 5m -kills 10
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"cairn/node/gossip"
	"cairn/node/gossip/lossbench"
)

func main() {
	d := gossip.DefaultTimings()
	var (
		o       lossbench.Options
		asJSON  = flag.Bool("json", false, "print the report as JSON")
		verbose = flag.Bool("v", false, "log memberlist's messages")
	)
	flag.IntVar(&o.Members, "members", 5, "cluster size")
	flag.Float64Var(&o.Loss, "loss", 0.10, "share of packets dropped (negative for none)")
	flag.DurationVar(&o.Period, "period", 30*time.Second, "how long live members are watched for false deaths, in all")
	flag.IntVar(&o.Kills, "kills", 3, "how many times a member is killed and brought back (negative for none)")
	flag.DurationVar(&o.Timings.ProbeInterval, "probe-interval", d.ProbeInterval, "memberlist probe interval")
	flag.DurationVar(&o.Timings.ProbeTimeout, "probe-timeout", d.ProbeTimeout, "memberlist probe timeout")
	flag.IntVar(&o.Timings.SuspicionMult, "suspicion-mult", d.SuspicionMult, "memberlist suspicion multiplier")
	flag.IntVar(&o.Timings.SuspicionMaxTimeoutMult, "suspicion-max-timeout-mult", d.SuspicionMaxTimeoutMult, "memberlist suspicion max timeout multiplier")
	flag.DurationVar(&o.Timings.GossipInterval, "gossip-interval", d.GossipInterval, "memberlist gossip interval")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := lossbench.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gossiploss:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		fmt.Print(rep)
	}
	if rep.FalseAgreements > 0 {
		os.Exit(2)
	}
}
