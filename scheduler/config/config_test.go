package config_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"cairn/scheduler/config"
	"cairn/scheduler/plugins/names"
)

func TestLoadReadsAFileAndDefaultsTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	data := `
percentageOfNodesToScore: 30
podMaxBackoffSeconds: 20
profiles:
- plugins:
    disabled:
    - name: NodeResourcesLeastAllocated
    enabled:
    - name: NodeResourcesBalancedAllocation
      weight: 5
- schedulerName: batch
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.PercentageOfNodesToScore != 30 || c.InitialBackoff() != time.Second || c.MaxBackoff() != 20*time.Second {
		t.Errorf("queue settings = %d%% %s %s", c.PercentageOfNodesToScore, c.InitialBackoff(), c.MaxBackoff())
	}
	if c.PodMaxInUnschedulablePodsDuration.Duration != 5*time.Minute || c.Parallelism != int32(runtime.NumCPU()) {
		t.Errorf("defaults = %s, parallelism %d", c.PodMaxInUnschedulablePodsDuration.Duration, c.Parallelism)
	}
	if len(c.Profiles) != 2 || c.Profiles[0].SchedulerName != config.DefaultSchedulerName || c.Profiles[1].SchedulerName != "batch" {
		t.Fatalf("profiles = %+v", c.Profiles)
	}
	weights := map[string]int32{}
	for _, p := range c.Profiles[0].EffectivePlugins() {
		weights[p.Name] = p.Weight
	}
	if _, ok := weights[names.NodeResourcesLeastAllocated]; ok {
		t.Error("disabled plugin still enabled")
	}
	if weights[names.NodeResourcesBalancedAllocation] != 5 || weights[names.TaintToleration] != 3 {
		t.Errorf("weights = %v", weights)
	}
	if got := len(c.Profiles[1].EffectivePlugins()); got != len(names.All()) {
		t.Errorf("batch profile has %d plugins, want all %d", got, len(names.All()))
	}
}

func TestParseRejectsWhatItDoesNotKnow(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "percentageOfNodes: 10", `unknown field "percentageOfNodes"`},
		{"unknown plugin", "profiles:\n- plugins:\n    enabled:\n    - name: NodeResourceFit", `unknown plugin "NodeResourceFit"`},
		{"unknown disabled plugin", "profiles:\n- plugins:\n    disabled:\n    - name: Nope", `plugins.disabled[0]: unknown plugin "Nope"`},
		{"percentage out of range", "percentageOfNodesToScore: 101", "percentageOfNodesToScore 101"},
		{"max backoff below initial", "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2", "podMaxBackoffSeconds 2"},
		{"weight out of range", "profiles:\n- plugins:\n    enabled:\n    - name: NodeAffinity\n      weight: 1000", "weight 1000"},
		{"duplicate scheduler name", "profiles:\n- schedulerName: a\n- schedulerName: a", `schedulerName "a" is already used`},
		{"no queue sort", "profiles:\n- plugins:\n    disabled:\n    - name: '*'", "exactly one queue sort plugin"},
		{"bad duration", "podMaxInUnschedulablePodsDuration: soon", "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	_, err := config.Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("error = %v", err)
	}
}

func TestDisablingAllThenEnablingKeepsTheGivenOrder(t *testing.T) {
	p := config.Profile{Plugins: config.Plugins{
		Disabled: []config.Plugin{{Name: "*"}},
		Enabled:  []config.Plugin{{Name: names.PrioritySort}, {Name: names.NodeResourcesFit}, {Name: names.NodeAffinity}, {Name: names.DefaultBinder}},
	}}
	var got []string
	for _, pl := range p.EffectivePlugins() {
		got = append(got, pl.Name)
	}
	if want := []string{names.PrioritySort, names.NodeResourcesFit, names.NodeAffinity, names.DefaultBinder}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("plugins = %v, want %v", got, want)
	}
	if w := p.EffectivePlugins()[2].Weight; w != 2 {
		t.Errorf("NodeAffinity weight = %d, want its default 2", w)
	}
}
