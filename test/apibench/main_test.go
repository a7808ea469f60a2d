package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"cairn/internal/apibench"
)

// TestSmallRunAgainstARealCluster runs the whole harness, scaled down, on
// real cairn processes: every request must succeed and every watcher must
// see the change.
func TestSmallRunAgainstARealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-replica cluster; skipped with -short")
	}
	bin := os.Getenv("CAIRN_BIN")
	if bin == "" {
		t.Skip("CAIRN_BIN is not set: build cairn (make build) and set CAIRN_BIN to run against real processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	rep, err := run(ctx, options{cairnBin: bin, pods: 200, clients: 8, watchers: 50, lists: 3, contentType: apibench.ContentTypeProtobuf}, &out, log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("report:\n%s", out.String())
	for _, name := range []string{"create", "get", "list", "list, limit 500"} {
		res, ok := rep.Find(name)
		if !ok || res.Requests == 0 || res.Errors != 0 {
			t.Errorf("%s: %+v, want requests and no errors", name, res)
		}
	}
	for _, name := range []string{"list", "list, limit 500"} {
		if res, _ := rep.Find(name); res.Items != 200 {
			t.Errorf("%s returned %d pods, want the 200 created", name, res.Items)
		}
	}
	if w := rep.Watch; w == nil || w.Opened != 50 || w.Seen != 50 || w.Servers != 3 {
		t.Errorf("watch fan-out %+v, want all 50 watchers over 3 servers to see the change", w)
	}
	if len(rep.Memory) != 3 {
		t.Fatalf("memory of %d servers, want 3", len(rep.Memory))
	}
	for _, m := range rep.Memory {
		if m.Samples == 0 || m.Peak < 1<<20 {
			t.Errorf("memory %+v, want samples of a plausible RSS", m)
		}
	}
	if c := rep.Cleanup; c == nil || c.Error != "" {
		t.Errorf("cleanup %+v, want the pods deleted", c)
	}
	if !strings.Contains(out.String(), "targets:") {
		t.Errorf("the printed report has no targets:\n%s", out.String())
	}
}
