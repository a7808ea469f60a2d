package main

import (
	"encoding/json"
	"fmt"
	"os"

	"cairn/internal/storebench"
	"cairn/internal/storebench/localcluster"
)

// writeJSON saves both sides' reports, keyed by flavor, for tools that track
// the numbers over time.
func writeJSON(path string, reports map[localcluster.Flavor]*storebench.Report) error {
	b, err := json.MarshalIndent(reports, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
