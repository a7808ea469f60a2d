package apibench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ServerMemory is the resident memory of one server process over the run.
type ServerMemory struct {
	// Source is where it was read: a metrics URL or "pid N".
	Source string `json:"source"`
	// Peak is the largest sample, Last the final one, in bytes.
	Peak uint64 `json:"peak_bytes"`
	Last uint64 `json:"last_bytes"`
	// Samples counts the successful reads.
	Samples int `json:"samples"`
	// Error is the last failed read, when no read succeeded.
	Error string `json:"error,omitempty"`
}

// rssMetric is the process collector's gauge that every server exports.
const rssMetric = "process_resident_memory_bytes"

// memorySource reads one server's resident memory.
type memorySource struct {
	name string
	read func(ctx context.Context) (uint64, error)
}

// memorySources prefers the metrics endpoints, as the servers may run on
// another machine or in another PID namespace; PIDs are the fallback.
func memorySources(cfg Config) []memorySource {
	var out []memorySource
	if len(cfg.MetricsURLs) > 0 {
		hc := &http.Client{Timeout: 5 * time.Second}
		for _, u := range cfg.MetricsURLs {
			out = append(out, memorySource{name: u, read: func(ctx context.Context) (uint64, error) {
				return readMetricsRSS(ctx, hc, u)
			}})
		}
		return out
	}
	for _, pid := range cfg.ServerPIDs {
		out = append(out, memorySource{name: fmt.Sprintf("pid %d", pid), read: func(context.Context) (uint64, error) {
			return readProcRSS(pid)
		}})
	}
	return out
}

// sampler reads every source at a fixed interval in the background, so
// that the peak between phases is seen too.
type sampler struct {
	sources []memorySource
	mu      sync.Mutex
	mem     []ServerMemory
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(ctx context.Context, sources []memorySource, every time.Duration) *sampler {
	s := &sampler{sources: sources, mem: make([]ServerMemory, len(sources)),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i, src := range sources {
		s.mem[i].Source = src.name
	}
	go func() {
		defer close(s.done)
		if len(sources) == 0 {
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample(ctx)
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// sample reads every source once.
func (s *sampler) sample(ctx context.Context) {
	for i, src := range s.sources {
		b, err := src.read(ctx)
		s.mu.Lock()
		m := &s.mem[i]
		if err != nil {
			if m.Samples == 0 {
				m.Error = err.Error()
			}
		} else {
			m.Samples++
			m.Error = ""
			m.Last = b
			m.Peak = max(m.Peak, b)
		}
		s.mu.Unlock()
	}
}

// finish takes a last sample and returns what was seen.
func (s *sampler) finish(ctx context.Context) []ServerMemory {
	close(s.stop)
	<-s.done
	s.sample(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ServerMemory(nil), s.mem...)
}

// readMetricsRSS fetches a Prometheus text endpoint and returns its
// process_resident_memory_bytes.
func readMetricsRSS(ctx context.Context, hc *http.Client, url string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("apibench: %w", err)
	}
	// Text format only: the parser below does not read protobuf exposition.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("apibench: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("apibench: GET %s: %s", url, resp.Status)
	}
	v, err := parseMetric(resp.Body, rssMetric)
	if err != nil {
		return 0, fmt.Errorf("apibench: %s: %w", url, err)
	}
	return uint64(v), nil
}

// parseMetric returns the value of an unlabelled sample in the Prometheus
// text exposition format.
func parseMetric(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' {
			continue // a comment, another metric, or one that only starts with name
		}
		fields := strings.Fields(rest)
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %w", name, err)
		}
		return v, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s metric", name)
}

// readProcRSS reads a local process's resident memory from /proc.
func readProcRSS(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("apibench: server pid %d: %w", pid, err)
	}
	defer f.Close()
	return parseProcStatusRSS(f)
}

// parseProcStatusRSS returns VmRSS from a /proc/PID/status file.
func parseProcStatusRSS(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("apibench: unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("apibench: VmRSS: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("apibench: %w", err)
	}
	return 0, errors.New("apibench: no VmRSS in /proc status (a kernel thread, or not Linux)")
}
