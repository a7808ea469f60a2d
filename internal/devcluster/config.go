package devcluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Config configures Up.
type Config struct {
	// Dir is the state directory (e.g. ~/.cairn/dev); see Layout.
	Dir string
	// Binary is the cairn binary the servers and agents run, and the one
	// the demo image holds; this process's executable if empty.
	Binary string
	// Kubeconfig is where the admin kubeconfig is written besides the
	// state directory (e.g. ~/.cairn/admin.kubeconfig); "" for nowhere.
	Kubeconfig string
	// Demo applies the demo Deployment and Service.
	Demo bool
	// PortOffset shifts the loopback ports; nil keeps the directory's
	// (0 for a new one).
	PortOffset *int
	// LogLevel is the servers' and agents' --log-level; "info" if empty.
	LogLevel string
	// Command is how the user runs cairn, for the hints printed ("cairn"
	// if empty).
	Command string
	// Out receives the progress and the hints for the user.
	Out io.Writer
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Force, once closed, makes the stop kill the children at once
	// instead of waiting for them (a second Ctrl-C).
	Force <-chan struct{}
}

func (c *Config) defaults() error {
	if c.Dir == "" {
		return errors.New("devcluster: no state directory given")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	c.Dir = dir
	if c.Binary == "" {
		if c.Binary, err = os.Executable(); err != nil {
			return fmt.Errorf("devcluster: finding this binary: %w", err)
		}
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Command == "" {
		c.Command = "cairn"
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Force == nil {
		c.Force = make(chan struct{})
	}
	return nil
}

// DefaultDir is the state directory used unless one is given:
// ~/.cairn/dev.
func DefaultDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "cairn-dev")
	}
	return filepath.Join(home, ".cairn", "dev")
}

// DefaultKubeconfig is where `cairn kubectl` looks for a kubeconfig when
// none is given: ~/.cairn/admin.kubeconfig.
func DefaultKubeconfig() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cairn", "admin.kubeconfig")
}
