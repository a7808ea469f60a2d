package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// LogNames are the names Logs accepts: the servers' and the agents'.
func LogNames() []string {
	t := NewTopology(0, true)
	out := names(t.Servers)
	for _, n := range t.Nodes {
		out = append(out, n.Short)
	}
	return out
}

// LogPath returns the log file of a server or agent of the cluster in
// dir, by short name (s1, n1) or node name (cairn-dev-n1).
func LogPath(dir, name string) (string, error) {
	short, err := childName(name)
	if err != nil {
		return "", err
	}
	return Layout{Dir: dir}.Log(short), nil
}

// Logs writes the log of a server or agent to w; with follow it then
// keeps writing what is appended until ctx ends.
func Logs(ctx context.Context, dir, name string, follow bool, w io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	p, err := LogPath(dir, name)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("devcluster: %s has no log yet in %s", name, Layout{Dir: dir}.Logs())
	}
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	defer f.Close()
	for {
		if _, err := io.Copy(w, f); err != nil {
			return fmt.Errorf("devcluster: %w", err)
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}
