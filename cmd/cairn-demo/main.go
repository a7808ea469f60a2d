// Command cairn-demo is the program of `cairn dev`'s demo image: the
// demo HTTP server (`__demo-http serve`) and its client (`__demo-http
// get`), as `cairn __demo-http` is. It is a small static binary of its
// own, so that a hundred demo pods do not each pay the start-up of cairn,
// and so that cairn-helper, which every exec runs, does not link
// net/http.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"cairn/internal/devcluster/demoapp"
)

// demoCommand is the first argument, as for `cairn __demo-http`: the
// image runs whichever binary it carries the same way.
const demoCommand = "__demo-http"

func main() {
	if len(os.Args) > 1 && os.Args[1] == demoCommand {
		os.Exit(runDemo(os.Args[2:]))
	}
	fmt.Fprintln(os.Stderr, "usage: cairn-demo "+demoCommand+" serve|get|whoami|ps ...: the program of the `cairn dev` demo image")
	os.Exit(2)
}

// runDemo runs `serve [--listen ADDR]`, `get [--count N] [--timeout D]
// [--retry-for D] URL`, `whoami [--retry-for D]` or `ps` and returns the
// exit code.
func runDemo(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: "+demoCommand+" serve|get|whoami|ps ...")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "serve":
		var listen string
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		demoapp.ServeFlags(fs, &listen)
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
			return 2
		}
		if err := demoapp.ListenAndServe(ctx, listen, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		return 0
	case "get":
		var opts demoapp.GetOptions
		fs := flag.NewFlagSet("get", flag.ContinueOnError)
		demoapp.GetFlags(fs, &opts)
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
			fmt.Fprintln(os.Stderr, "usage: "+demoCommand+" get [--count N] [--timeout D] [--retry-for D] URL")
			return 2
		}
		if err := demoapp.Get(ctx, fs.Arg(0), opts, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		return 0
	case "whoami":
		fs := flag.NewFlagSet("whoami", flag.ContinueOnError)
		retryFor := fs.Duration("retry-for", 30*time.Second, "how long to retry a failing request")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
			return 2
		}
		if err := demoapp.WhoAmI(ctx, demoapp.ServiceAccountDir, *retryFor, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		return 0
	case "ps":
		if len(args) != 1 {
			return 2
		}
		if err := demoapp.PS("/proc", os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s: unknown command %q (serve, get, whoami or ps)\n", demoCommand, args[0])
	return 2
}
