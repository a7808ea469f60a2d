package devcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Settings are fixed when a state directory is first used: the servers'
// data records their peer addresses, so a restart must use the same.
type Settings struct {
	// PortOffset shifts every loopback port (see NewTopology).
	PortOffset int `json:"portOffset"`
}

// resolveSettings returns the directory's settings, recording them on
// first use. offset is the one asked for, nil for whatever was used
// before (0 on first use).
func resolveSettings(l Layout, offset *int) (Settings, error) {
	var s Settings
	raw, err := os.ReadFile(l.Settings())
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &s); err != nil {
			return s, fmt.Errorf("devcluster: %s: %w", l.Settings(), err)
		}
		if offset != nil && *offset != s.PortOffset {
			return s, fmt.Errorf("devcluster: %s was created with --port-offset %d: pass the same, or use a new --dir", l.Dir, s.PortOffset)
		}
		return s, nil
	case !errors.Is(err, os.ErrNotExist):
		return s, fmt.Errorf("devcluster: %w", err)
	}
	if offset != nil {
		s.PortOffset = *offset
	}
	if err := checkPortOffset(s.PortOffset); err != nil {
		return s, err
	}
	return s, writeJSON(l.Settings(), s)
}

// writeJSON writes v to path atomically.
func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	return nil
}
