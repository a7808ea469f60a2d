package apibench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Report is everything one Run measured.
type Report struct {
	// Servers are the API servers the run spread its requests over.
	Servers []string `json:"servers"`
	// Settings are the effective settings, defaults filled in.
	Settings Settings `json:"settings"`
	// Results holds the create, get and list phases, in the order run.
	Results []Result `json:"results"`
	// Watch is the watch fan-out measurement, if it ran.
	Watch *WatchResult `json:"watch,omitempty"`
	// Memory holds each server's resident memory over the run.
	Memory []ServerMemory `json:"memory,omitempty"`
	// Cleanup is the deletion of the run's pods, unless they were kept.
	Cleanup *Cleanup `json:"cleanup,omitempty"`
	// Targets are the limits the run is judged against.
	Targets Targets `json:"targets"`
	// Notes explain anything the run skipped.
	Notes []string `json:"notes,omitempty"`
}

// Settings record how a run was configured, so that a report read later
// says what its numbers mean.
type Settings struct {
	RunID          string        `json:"run_id"`
	Namespace      string        `json:"namespace"`
	Pods           int           `json:"pods"`
	Clients        int           `json:"clients"`
	Gets           int           `json:"gets"`
	Lists          int           `json:"lists"`
	PageSize       int64         `json:"page_size"`
	Watchers       int           `json:"watchers"`
	ContentType    string        `json:"content_type"`
	QPS            float32       `json:"qps"`
	Burst          int           `json:"burst"`
	SampleInterval time.Duration `json:"sample_interval_ns"`
}

// Cleanup is the final deletecollection of the run's pods.
type Cleanup struct {
	Elapsed time.Duration `json:"elapsed_ns"`
	Error   string        `json:"error,omitempty"`
}

// Find returns the phase with the given name.
func (r *Report) Find(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

// WriteJSON writes the report and its verdicts as indented JSON; durations
// are in nanoseconds and memory in bytes.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Verdicts []Verdict `json:"verdicts"`
	}{r, r.Verdicts()})
}

// WriteTable writes the report for people: the request phases, the watch
// fan-out, memory, then every target with its verdict.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Settings
	fmt.Fprintf(w, "API benchmark: %d server(s), %d pods in namespace %s, %d clients, %s, run %s\n\n",
		len(r.Servers), s.Pods, s.Namespace, s.Clients, s.ContentType, s.RunID)
	if len(r.Results) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "measurement\tclients\trequests\terrors\treq/s\tp50\tp90\tp99\tmax\tpods")
		for _, res := range r.Results {
			items := ""
			if res.Items > 0 {
				items = fmt.Sprint(res.Items)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\n",
				res.Name, res.Clients, res.Requests, res.Errors, res.Throughput,
				FormatDuration(res.Latency.P50), FormatDuration(res.Latency.P90),
				FormatDuration(res.Latency.P99), FormatDuration(res.Latency.Max), items)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if c, ok := r.Find("create"); ok {
			fmt.Fprintf(w, "writes: %.0f pod creates per second with %d clients\n", c.Throughput, c.Clients)
		}
		for _, res := range r.Results {
			if res.FirstError != "" {
				fmt.Fprintf(w, "  %s: first error: %s\n", res.Name, res.FirstError)
			}
		}
	}
	if wr := r.Watch; wr != nil {
		writeWatch(w, wr)
	}
	if len(r.Memory) > 0 {
		if err := r.writeMemory(w); err != nil {
			return err
		}
	}
	if err := writeVerdicts(w, r.Verdicts()); err != nil {
		return err
	}
	if c := r.Cleanup; c != nil {
		if c.Error != "" {
			fmt.Fprintf(w, "\ncleanup failed after %s: %s\n", FormatDuration(c.Elapsed), c.Error)
		} else {
			fmt.Fprintf(w, "\ncleanup: one deletecollection of the namespace's pods took %s\n", FormatDuration(c.Elapsed))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func writeWatch(w io.Writer, wr *WatchResult) {
	fmt.Fprintf(w, "\nwatch fan-out: %d of %d watches opened over %d server(s) in %s; the change (a pod create) took %s\n",
		wr.Opened, wr.Watchers, wr.Servers, FormatDuration(wr.OpenTime), FormatDuration(wr.WriteLatency))
	fmt.Fprintf(w, "  delivered to %d of %d: delay p50 %s, p90 %s, p99 %s, max %s",
		wr.Seen, wr.Watchers, FormatDuration(wr.Delay.P50), FormatDuration(wr.Delay.P90),
		FormatDuration(wr.Delay.P99), FormatDuration(wr.Delay.Max))
	if wr.Seen == wr.Watchers {
		fmt.Fprintf(w, "; all saw it after %s\n", FormatDuration(wr.AllSeen))
	} else {
		fmt.Fprintf(w, "; %d did not see it within %s\n", wr.Watchers-wr.Seen, FormatDuration(wr.Timeout))
	}
	if wr.FirstError != "" {
		fmt.Fprintf(w, "  %d watch error(s), first: %s\n", wr.Errors, wr.FirstError)
	}
}

func (r *Report) writeMemory(w io.Writer) error {
	fmt.Fprintf(w, "\nserver memory (resident set, sampled every %s):\n", FormatDuration(r.Settings.SampleInterval))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  server\tpeak\tend\tsamples")
	for _, m := range r.Memory {
		if m.Samples == 0 {
			fmt.Fprintf(tw, "  %s\t-\t-\t0\t%s\n", m.Source, m.Error)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", m.Source, FormatBytes(m.Peak), FormatBytes(m.Last), m.Samples)
	}
	return tw.Flush()
}

func writeVerdicts(w io.Writer, vs []Verdict) error {
	fmt.Fprintln(w, "\ntargets:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  target\tvalue\tlimit\tresult")
	for _, v := range vs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.What, v.Value, v.Target, v.Result)
	}
	return tw.Flush()
}
