package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseLabels(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    map[string]string
		wantErr bool
	}{
		{name: "pairs", in: []string{"zone=a", "example.com/tier=web", ""}, want: map[string]string{"zone": "a", "example.com/tier": "web"}},
		{name: "empty value", in: []string{"gpu="}, want: map[string]string{"gpu": ""}},
		{name: "no equals", in: []string{"zone"}, wantErr: true},
		{name: "bad key", in: []string{"bad key=x"}, wantErr: true},
		{name: "bad value", in: []string{"k=not valid"}, wantErr: true},
		{name: "own role", in: []string{"node-role.kubernetes.io/worker="}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLabels(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseTaints(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []corev1.Taint
		wantErr bool
	}{
		{name: "with value", in: []string{"dedicated=gpu:NoSchedule"}, want: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		{name: "without value", in: []string{"example.com/maint:NoExecute"}, want: []corev1.Taint{{Key: "example.com/maint", Effect: corev1.TaintEffectNoExecute}}},
		{name: "no effect", in: []string{"a=b"}, wantErr: true},
		{name: "bad effect", in: []string{"a=b:Never"}, wantErr: true},
		{name: "bad key", in: []string{"=b:NoSchedule"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTaints(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAnAgentWithoutItsShimSaysHowToGetOne: on the embedded runtime the
// agent refuses to start without a container shim it can run, rather
// than register a node where every container fails.
func TestAnAgentWithoutItsShimSaysHowToGetOne(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "cairn-shim")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shim := range []string{filepath.Join(dir, "missing"), notExec, dir} {
		cfg := Config{NodeName: "n1", DataDir: dir, ShimBinary: shim}
		err := cfg.check()
		if err == nil || !strings.Contains(err.Error(), shim) || !strings.Contains(err.Error(), "make build") {
			t.Errorf("check with shim %s: %v, want an error naming it and saying how to build one", shim, err)
		}
	}
	ok := filepath.Join(dir, "ok-shim")
	if err := os.WriteFile(ok, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{NodeName: "n1", DataDir: dir, ShimBinary: ok}
	if err := cfg.check(); err != nil {
		t.Errorf("check with an executable shim: %v", err)
	}
	cfg = Config{NodeName: "n1", DataDir: dir, Runtime: RuntimeCRI, ShimBinary: filepath.Join(dir, "missing")}
	if err := cfg.check(); err != nil {
		t.Errorf("check on the CRI runtime, which needs no shim: %v", err)
	}
}
