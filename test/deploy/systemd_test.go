package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unitFile is a unit file's settings: section -> key -> values, in order.
type unitFile map[string]map[string][]string

// parseUnit reads a unit file, ignoring comments.
func parseUnit(t *testing.T, path string) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	for _, line := range strings.Split(readFileString(t, path), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: cannot read %q", path, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// get returns the last value of a key ("" when unset).
func (u unitFile) get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// TestSystemdUnitsSayWhatTheServicesNeed checks the settings the units
// exist for: where they start, how they restart, their limits, and for
// the agent the stop that spares its containers and the absence of the
// sandboxing that would hide its mounts or break its pods.
func TestSystemdUnitsSayWhatTheServicesNeed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot(t), "deploy", "systemd")
	// Options that give a service a mount namespace of its own, or a
	// seccomp filter or privilege limit its children inherit.
	agentForbidden := []string{
		"ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "ReadOnlyPaths", "InaccessiblePaths",
		"ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc",
		"PrivateMounts", "MountFlags", "NoNewPrivileges", "SystemCallFilter", "RestrictAddressFamilies",
		"RestrictNamespaces", "RestrictSUIDSGID", "LockPersonality", "MemoryDenyWriteExecute", "CapabilityBoundingSet",
		"RestrictRealtime", "SystemCallArchitectures", "User", "DynamicUser",
	}
	tests := []struct {
		unit string
		want map[string]string // [Section]Key -> value
		none []string          // [Service] keys that must not be set
	}{
		{
			unit: "cairn-server.service",
			want: map[string]string{
				"Unit.After": "network-online.target", "Unit.Wants": "network-online.target",
				"Service.ExecStart": "/usr/local/bin/cairn server --config /etc/cairn/server.yaml",
				"Service.Restart":   "always", "Service.RestartSec": "2s",
				"Service.LimitNOFILE": "1048576", "Service.TasksMax": "8192",
				"Service.ProtectSystem": "strict", "Service.NoNewPrivileges": "yes", "Service.CapabilityBoundingSet": "",
				"Install.WantedBy": "multi-user.target",
			},
			none: []string{"KillMode"},
		},
		{
			unit: "cairn-agent.service",
			want: map[string]string{
				"Unit.After": "network-online.target", "Unit.Wants": "network-online.target",
				"Service.ExecStart": "/usr/local/bin/cairn agent --config /etc/cairn/agent.yaml",
				"Service.Restart":   "always", "Service.RestartSec": "2s",
				"Service.KillMode": "process", "Service.Delegate": "yes",
				"Service.LimitNOFILE": "1048576", "Service.TasksMax": "infinity", "Service.LimitMEMLOCK": "infinity",
				"Install.WantedBy": "multi-user.target",
			},
			none: agentForbidden,
		},
	}
	for _, tt := range tests {
		t.Run(tt.unit, func(t *testing.T) {
			path := filepath.Join(dir, tt.unit)
			u := parseUnit(t, path)
			for sk, want := range tt.want {
				section, key, _ := strings.Cut(sk, ".")
				if _, set := u[section][key]; !set {
					t.Errorf("%s: [%s] %s is not set, want %q", tt.unit, section, key, want)
					continue
				}
				if got := u.get(section, key); got != want {
					t.Errorf("%s: [%s] %s=%s, want %q", tt.unit, section, key, got, want)
				}
			}
			for _, key := range tt.none {
				if _, set := u["Service"][key]; set {
					t.Errorf("%s: %s must not be set", tt.unit, key)
				}
			}
			if !strings.Contains(readFileString(t, path), "MemoryHigh=") {
				t.Errorf("%s: no MemoryHigh guidance", tt.unit)
			}
		})
	}
}

// TestSystemdUnitsPassSystemdsChecks runs `systemd-analyze verify` on the
// units (unknown keys, bad values, missing binary) and scores the server's
// sandboxing with `systemd-analyze security`.
func TestSystemdUnitsPassSystemdsChecks(t *testing.T) {
	t.Parallel()
	requireTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	var units []string
	for _, name := range []string{"cairn-server.service", "cairn-agent.service"} {
		text := readFileString(t, filepath.Join(repoRoot(t), "deploy", "systemd", name))
		// verify wants the binary to exist.
		text = strings.ReplaceAll(text, "/usr/local/bin/cairn", cairnBin(t))
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, path)
	}
	out, err := exec.Command("systemd-analyze", slices.Concat([]string{"verify"}, units)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// The exposure score is 0 (locked down) to 10 (unprotected); the
	// threshold counts in tenths.
	out, err = exec.Command("systemd-analyze", "security", "--offline=true", "--threshold=25", units[0]).CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Errorf("systemd-analyze security rates the server's unit above 2.5: %v\n%s", err, lines[len(lines)-1])
	}
}
