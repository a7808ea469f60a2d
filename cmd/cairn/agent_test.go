package main

import (
	"strings"
	"testing"
)

func TestAgentFlagsRefuseAnEvictionFractionOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		value   string
		wantErr bool
	}{
		{"0.1", false}, {"0.01", false}, {"0", true}, {"1", true}, {"10", true}, {"-0.1", true},
	} {
		cmd := newAgentCmd()
		if err := cmd.Flags().Parse([]string{"--eviction-disk-free", tc.value}); err != nil {
			t.Fatal(err)
		}
		_, err := agentConfig(cmd.Flags())
		if got := err != nil && strings.Contains(err.Error(), "--eviction-disk-free"); got != tc.wantErr {
			t.Errorf("--eviction-disk-free %s: err %v, want an error naming the flag: %v", tc.value, err, tc.wantErr)
		}
	}
}

func TestAgentFlagsRefuseSysctlsOfTheHost(t *testing.T) {
	for _, tc := range []struct {
		value   string
		wantErr bool
	}{
		{"kernel.msg*,net.core.somaxconn", false}, {"net.*", false}, {"kernel.*", true}, {"vm.swappiness", true}, {"*", true},
	} {
		cmd := newAgentCmd()
		if err := cmd.Flags().Parse([]string{"--allowed-unsafe-sysctls", tc.value}); err != nil {
			t.Fatal(err)
		}
		_, err := agentConfig(cmd.Flags())
		if got := err != nil && strings.Contains(err.Error(), "--allowed-unsafe-sysctls"); got != tc.wantErr {
			t.Errorf("--allowed-unsafe-sysctls %s: err %v, want an error naming the flag: %v", tc.value, err, tc.wantErr)
		}
	}
}
