package demoapp

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The flags of the demo's two commands, `serve` and `get`, defined once
// for both binaries that run them (cairn, with cobra, and cairn-demo).

// ServeFlags defines serve's flags on fs.
func ServeFlags(fs *flag.FlagSet, listen *string) {
	fs.StringVar(listen, "listen", ":"+strconv.Itoa(DefaultPort), "address to listen on")
}

// GetFlags defines get's flags on fs.
func GetFlags(fs *flag.FlagSet, opts *GetOptions) {
	fs.IntVar(&opts.Count, "count", 1, "requests to send, each on a new connection")
	fs.DurationVar(&opts.Timeout, "timeout", 5*time.Second, "timeout of each attempt")
	fs.DurationVar(&opts.RetryFor, "retry-for", 0, "how long to retry a failing request")
}

// ListenAndServe listens on addr, says where to out, and serves the demo
// as the pod of the environment until ctx ends.
func ListenAndServe(ctx context.Context, addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	id := IdentityFromEnv()
	fmt.Fprintf(out, "serving on %s as pod %s (%s)\n", ln.Addr(), id.Pod, id.IP)
	return Serve(ctx, ln, id)
}
