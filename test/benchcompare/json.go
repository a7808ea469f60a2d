package main

import (
	"encoding/json"
	"fmt"
	"os"

	"cairn/internal/storebench"
	"cairn/internal/storebench/localcluster"
)

// jsonReports is the shape of the -json file: etcd's report and one report
// per cairn variant, keyed by its Raft log store. A side that did not run is
// absent.
type jsonReports struct {
	Etcd  *storebench.Report            `json:"etcd,omitempty"`
	Cairn map[string]*storebench.Report `json:"cairn,omitempty"`
}

// newJSONReports arranges the reports by side for the -json file.
func newJSONReports(reports map[side]*storebench.Report) jsonReports {
	var out jsonReports
	for s, rep := range reports {
		switch s.flavor {
		case localcluster.Etcd:
			out.Etcd = rep
		case localcluster.Cairn:
			if out.Cairn == nil {
				out.Cairn = map[string]*storebench.Report{}
			}
			out.Cairn[s.logStore] = rep
		}
	}
	return out
}

// writeJSON saves every side's report for tools that track the numbers over
// time.
func writeJSON(path string, reports map[side]*storebench.Report) error {
	b, err := json.MarshalIndent(newJSONReports(reports), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
