package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// resolved is what a command's flags hold once loadConfig has run.
type resolved struct {
	dataDir   string
	retention int
	interval  time.Duration
	disable   []string
	logLevel  string
}

// newProbeRoot returns the real root command with a test-only "probe"
// subcommand whose flags are a few of the server's, so config resolution
// is observed without starting a server.
func newProbeRoot(got *resolved) *cobra.Command {
	root := newRootCmd()
	probe := &cobra.Command{
		Use:  "probe",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			got.dataDir, _ = f.GetString("data-dir")
			got.retention, _ = f.GetInt("snapshot-retention")
			got.interval, _ = f.GetDuration("snapshot-interval")
			got.disable, _ = f.GetStringSlice("disable")
			got.logLevel, _ = f.GetString("log-level")
			return nil
		},
	}
	f := probe.Flags()
	f.String("data-dir", "", "")
	f.Int("snapshot-retention", 5, "")
	f.Duration("snapshot-interval", 0, "")
	f.StringSlice("disable", nil, "")
	root.AddCommand(probe)
	return root
}

// TestConfigFlagsOverrideEnvOverrideFile checks the precedence the README
// promises (flags > CAIRN_* environment > --config YAML file) and that bad
// config input is reported with the key or variable to fix.
func TestConfigFlagsOverrideEnvOverrideFile(t *testing.T) {
	envVars := []string{"CAIRN_DATA_DIR", "CAIRN_SNAPSHOT_RETENTION", "CAIRN_SNAPSHOT_INTERVAL", "CAIRN_DISABLE", "CAIRN_LOG_LEVEL"}
	defaults := resolved{retention: 5, logLevel: "info"}
	tests := []struct {
		name    string
		file    string // YAML --config content; empty: no --config
		env     map[string]string
		args    []string
		want    resolved
		wantErr []string
	}{
		{
			name: "defaults when nothing is set",
			want: defaults,
		},
		{
			name: "config file sets every kind of flag",
			file: "data-dir: /from/file\nsnapshot-retention: 7\nsnapshot-interval: 3s\ndisable: [apiserver, scheduler]\nlog-level: debug\n",
			want: resolved{dataDir: "/from/file", retention: 7, interval: 3 * time.Second, disable: []string{"apiserver", "scheduler"}, logLevel: "debug"},
		},
		{
			name: "environment overrides the file",
			file: "data-dir: /from/file\nsnapshot-retention: 7\n",
			env:  map[string]string{"CAIRN_DATA_DIR": "/from/env", "CAIRN_LOG_LEVEL": "warn"},
			want: resolved{dataDir: "/from/env", retention: 7, logLevel: "warn"},
		},
		{
			name: "flags override the environment and the file",
			file: "data-dir: /from/file\nsnapshot-interval: 3s\n",
			env:  map[string]string{"CAIRN_DATA_DIR": "/from/env", "CAIRN_SNAPSHOT_INTERVAL": "2s"},
			args: []string{"--data-dir", "/from/flag", "--log-level", "error"},
			want: resolved{dataDir: "/from/flag", retention: 5, interval: 2 * time.Second, logLevel: "error"},
		},
		{
			name: "a flag given its default value still wins",
			env:  map[string]string{"CAIRN_SNAPSHOT_RETENTION": "9"},
			args: []string{"--snapshot-retention", "5"},
			want: defaults,
		},
		{
			name: "environment alone, list as commas",
			env:  map[string]string{"CAIRN_SNAPSHOT_RETENTION": "9", "CAIRN_DISABLE": "controllers,scheduler"},
			want: resolved{retention: 9, disable: []string{"controllers", "scheduler"}, logLevel: "info"},
		},
		{
			name:    "unknown key in the file is named",
			file:    "data-dir: /x\ndata-dri: /typo\n",
			wantErr: []string{`unknown key "data-dri"`},
		},
		{
			name:    "bad value from the environment names the variable",
			env:     map[string]string{"CAIRN_SNAPSHOT_RETENTION": "many"},
			wantErr: []string{`"many"`, "CAIRN_SNAPSHOT_RETENTION"},
		},
		{
			name:    "bad value from the file names the key",
			file:    "snapshot-interval: soon\n",
			wantErr: []string{`"soon"`, "snapshot-interval"},
		},
		{
			name:    "missing config file",
			args:    []string{"--config", "/nonexistent/cairn.yaml"},
			wantErr: []string{"/nonexistent/cairn.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Unset or empty, every variable the probe could read is ours.
			for _, name := range envVars {
				t.Setenv(name, tt.env[name])
			}
			args := append([]string{"probe"}, tt.args...)
			if tt.file != "" {
				path := filepath.Join(t.TempDir(), "cairn.yaml")
				if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", path)
			}
			var got resolved
			root := newProbeRoot(&got)
			root.SetArgs(args)
			root.SetOut(io.Discard)
			root.SetErr(io.Discard)
			err := root.Execute()

			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("cairn %s: no error, want one saying %q (resolved %+v)", strings.Join(args, " "), tt.wantErr, got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("cairn %s: %v", strings.Join(args, " "), err)
			}
			if got.dataDir != tt.want.dataDir || got.retention != tt.want.retention || got.interval != tt.want.interval ||
				!slices.Equal(got.disable, tt.want.disable) || got.logLevel != tt.want.logLevel {
				t.Errorf("resolved %+v, want %+v", got, tt.want)
			}
		})
	}
}
