package storebench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one Run measured.
type Report struct {
	// Endpoints are the endpoints the run started with.
	Endpoints []string `json:"endpoints"`
	// Settings are the effective settings, defaults filled in.
	Settings Settings `json:"settings"`
	// Results holds the put and get measurements, in the order run.
	Results []Result `json:"results"`
	// Failover is the failover measurement, if it ran.
	Failover *FailoverResult `json:"failover,omitempty"`
	// Notes explain anything the run skipped.
	Notes []string `json:"notes,omitempty"`
}

// Settings records how a Run was configured, so that a report read later
// says what its numbers mean.
type Settings struct {
	Workload     Workload      `json:"workload"`
	Clients      int           `json:"clients"`
	Conns        int           `json:"conns"`
	Total        int           `json:"total,omitempty"`
	Duration     time.Duration `json:"duration_ns"`
	KeySize      int           `json:"key_size"`
	ValueSize    int           `json:"value_size"`
	Keyspace     int           `json:"keyspace"`
	WriteTimeout time.Duration `json:"write_timeout_ns"`
	TLS          bool          `json:"tls"`
}

func newReport(cfg Config) *Report {
	return &Report{
		Endpoints: cfg.Endpoints,
		Settings: Settings{
			Workload:     cfg.Workload,
			Clients:      cfg.Clients,
			Conns:        cfg.Conns,
			Total:        cfg.Total,
			Duration:     cfg.Duration,
			KeySize:      cfg.KeySize,
			ValueSize:    cfg.ValueSize,
			Keyspace:     cfg.Keyspace,
			WriteTimeout: cfg.WriteTimeout,
			TLS:          cfg.TLS != nil,
		},
	}
}

// Find returns the measurement with the given name and number of clients.
func (r *Report) Find(name string, clients int) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name && res.Clients == clients {
			return res, true
		}
	}
	return Result{}, false
}

// WriteJSON writes the report as indented JSON; durations are in nanoseconds.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people: one row per measurement, then the
// failover outcome.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Settings
	fmt.Fprintf(w, "store benchmark: %d endpoint(s), %d-byte keys, %d-byte values, keyspace %d, %d conns\n\n",
		len(r.Endpoints), s.KeySize, s.ValueSize, s.Keyspace, s.Conns)
	if len(r.Results) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "measurement\tclients\trequests\terrors\treq/s\tmean\tp50\tp99\tmax")
		for _, res := range r.Results {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\n",
				res.Name, res.Clients, res.Ops, res.Errors, res.Throughput,
				FormatDuration(res.Latency.Mean), FormatDuration(res.Latency.P50),
				FormatDuration(res.Latency.P99), FormatDuration(res.Latency.Max))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, res := range r.Results {
			if res.FirstError != "" {
				fmt.Fprintf(w, "  %s (%d clients): first error: %s\n", res.Name, res.Clients, res.FirstError)
			}
		}
	}
	if f := r.Failover; f != nil {
		writeFailover(w, f)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	return nil
}

func writeFailover(w io.Writer, f *FailoverResult) {
	fmt.Fprintf(w, "\nfailover: %d writers; killed leader %s (%s) at %s",
		f.Writers, f.KilledMember, f.KilledEndpoint, FormatDuration(f.KilledAt))
	if f.NewLeader != "" {
		fmt.Fprintf(w, "; new leader %s", f.NewLeader)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  writes acknowledged   %d (%d failed or timed out) in %s\n", f.Acked, f.Failed, FormatDuration(f.Elapsed))
	fmt.Fprintf(w, "  longest write gap     %s (from %s to %s)\n", FormatDuration(f.LongestGap),
		FormatDuration(f.GapFrom), FormatDuration(f.GapFrom+f.LongestGap))
	if !f.Recovered {
		fmt.Fprintln(w, "  no write sent after the kill was acknowledged: the cluster did not recover")
	}
	fmt.Fprintf(w, "  acknowledged lost     %d of %d", f.Lost, f.Acked)
	if f.Lost > 0 {
		fmt.Fprintf(w, " (e.g. %s)", strings.Join(f.LostKeys, ", "))
	}
	fmt.Fprintf(w, "; %d read back intact with linearizable reads from the survivors\n", f.Verified)
}

// FormatDuration prints a duration with about three significant digits in
// the unit that suits it, so that columns stay short and comparable.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return threeDigits(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		return threeDigits(float64(d)/float64(time.Millisecond)) + "ms"
	default:
		return threeDigits(d.Seconds()) + "s"
	}
}

// threeDigits formats v (at least 1) with three significant digits and never
// in exponent form, which %g would use for 999.9.
func threeDigits(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
