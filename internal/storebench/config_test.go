package storebench

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	base := func() Config { return Config{Endpoints: []string{"127.0.0.1:2379"}} }
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{"defaults are valid", func(*Config) {}, ""},
		{"unknown workload", func(c *Config) { c.Workload = "scan" }, "unknown workload"},
		{"no endpoints", func(c *Config) { c.Endpoints = nil }, "no endpoints"},
		{"plain http needs insecure", func(c *Config) { c.Endpoints = []string{"http://127.0.0.1:2379"} }, "pass --insecure"},
		{"plain http with insecure", func(c *Config) {
			c.Endpoints = []string{"http://127.0.0.1:2379"}
			c.Insecure = true
		}, ""},
		{"negative clients", func(c *Config) { c.Clients = -1 }, "at least 1"},
		{"negative duration", func(c *Config) { c.Duration = -1 }, "must not be negative"},
		{"key too short for keyspace", func(c *Config) { c.KeySize = 8 }, "use at least 18"},
		{"failover needs a kill command", func(c *Config) { c.Workload = WorkloadFailover }, "--kill-command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.edit(&c)
			got, err := c.withDefaults()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("withDefaults: %v", err)
				}
				if got.Clients != DefaultClients || got.ValueSize != DefaultValueSize || got.Logger == nil {
					t.Errorf("defaults not applied: %+v", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "storebench: ") {
				t.Errorf("withDefaults error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestWorkloadsRunFailoverLastAndOnlyWithAKillCommand(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []Workload
	}{
		{"all without kill command", Config{Workload: WorkloadAll}, []Workload{WorkloadPut, WorkloadGet}},
		{"all with kill command", Config{Workload: WorkloadAll, KillCommand: "true"},
			[]Workload{WorkloadPut, WorkloadGet, WorkloadFailover}},
		{"one workload", Config{Workload: WorkloadGet}, []Workload{WorkloadGet}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.workloads(); !slices.Equal(got, tt.want) {
				t.Errorf("workloads = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWithSchemeFollowsTheTransport(t *testing.T) {
	tests := []struct {
		ep     string
		secure bool
		want   string
	}{
		{"127.0.0.1:2379", true, "https://127.0.0.1:2379"},
		{"127.0.0.1:2379", false, "http://127.0.0.1:2379"},
		{"https://a:1", false, "https://a:1"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := withScheme(tt.ep, tt.secure); got != tt.want {
				t.Errorf("withScheme(%q, %v) = %q, want %q", tt.ep, tt.secure, got, tt.want)
			}
		})
	}
}

func TestTLSConfigNeedsCertAndKeyTogether(t *testing.T) {
	tests := []struct {
		name          string
		ca, cert, key string
		wantErr       string
	}{
		{"system roots", "", "", "", ""},
		{"cert without key", "", "c.pem", "", "both --cert and --key"},
		{"missing CA file", "/nonexistent/ca.pem", "", "", "reading CA certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := TLSConfig(tt.ca, tt.cert, tt.key)
			if tt.wantErr == "" {
				if err != nil || cfg.MinVersion != tls.VersionTLS12 {
					t.Errorf("TLSConfig = %+v, %v", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("TLSConfig error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestExpandKillFillsThePlaceholders(t *testing.T) {
	tests := []struct {
		name, command, want string
	}{
		{"member", "kill -9 $(cat /run/x/{member}.pid)", "kill -9 $(cat /run/x/s2.pid)"},
		{"endpoint and member", "stop {endpoint} {member} {member}", "stop http://127.0.0.1:12379 s2 s2"},
		{"no placeholders", "pkill-one", "pkill-one"},
	}
	m := member{Name: "s2", Endpoint: "http://127.0.0.1:12379"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := expandKill(tt.command, m); got != tt.want {
				t.Errorf("expandKill = %q, want %q", got, tt.want)
			}
		})
	}
}
