// Package config is the scheduler's configuration file: profiles with
// plugin enable/disable lists and score weights, how many nodes to score,
// and the queue's backoff. Load reads it strictly, so a misspelt field or
// plugin is an error rather than a silently ignored setting.
//
// A file that disables one plugin and weighs another:
//
//	percentageOfNodesToScore: 0   # 0 = adaptive, as Kubernetes
//	podInitialBackoffSeconds: 1
//	podMaxBackoffSeconds: 10
//	profiles:
//	- schedulerName: default-scheduler
//	  plugins:
//	    disabled:
//	    - name: NodeResourcesLeastAllocated
//	    enabled:
//	    - name: NodeResourcesBalancedAllocation
//	      weight: 3
package config

import (
	"fmt"
	"os"
	"runtime"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// DefaultSchedulerName is the name pods get from the API server when they
// name no scheduler.
const DefaultSchedulerName = "default-scheduler"

// Defaults for the queue, as kube-scheduler's.
const (
	DefaultPodInitialBackoffSeconds = 1
	DefaultPodMaxBackoffSeconds     = 10
	DefaultPodMaxInUnschedulable    = 5 * time.Minute
)

// MaxWeight bounds a score plugin's weight, so the weighted sum of all
// plugins cannot overflow.
const MaxWeight = 100

// Config is the scheduler configuration.
type Config struct {
	// PercentageOfNodesToScore is the share of nodes to find feasible
	// before scoring stops looking; 0 picks Kubernetes' adaptive value
	// (50% minus 1% per 125 nodes, at least 5%), and at least 100 nodes
	// are always searched.
	PercentageOfNodesToScore int32 `json:"percentageOfNodesToScore,omitempty"`
	// PodInitialBackoffSeconds is the backoff after a pod's first failed
	// attempt; it doubles with every attempt.
	PodInitialBackoffSeconds int64 `json:"podInitialBackoffSeconds,omitempty"`
	// PodMaxBackoffSeconds caps the backoff.
	PodMaxBackoffSeconds int64 `json:"podMaxBackoffSeconds,omitempty"`
	// PodMaxInUnschedulablePodsDuration is how long an unschedulable pod
	// waits for a relevant event before it is retried anyway.
	PodMaxInUnschedulablePodsDuration metav1.Duration `json:"podMaxInUnschedulablePodsDuration,omitempty"`
	// Parallelism is the number of goroutines filtering and scoring
	// nodes; 0 means the number of CPUs.
	Parallelism int32 `json:"parallelism,omitempty"`
	// Profiles are the schedulers run, one per schedulerName.
	Profiles []Profile `json:"profiles,omitempty"`
}

// Profile is one scheduler name and its plugins.
type Profile struct {
	// SchedulerName is the spec.schedulerName of the pods it schedules.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Plugins changes the default plugin set.
	Plugins Plugins `json:"plugins,omitempty"`
}

// Plugins edits the default plugin list: Disabled is applied first
// ("*" disables all), then Enabled adds plugins or sets their weights.
// A plugin takes part in every phase it implements.
type Plugins struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin; Weight matters for score plugins only (0 keeps
// the default).
type Plugin struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight,omitempty"`
}

// Default returns the configuration used without a file.
func Default() Config {
	var c Config
	c.SetDefaults()
	return c
}

// Load reads, defaults and validates a configuration file.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config: %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML (or JSON) strictly, then defaults and validates it.
func Parse(data []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// SetDefaults fills unset fields.
func (c *Config) SetDefaults() {
	if c.PodInitialBackoffSeconds == 0 {
		c.PodInitialBackoffSeconds = DefaultPodInitialBackoffSeconds
	}
	if c.PodMaxBackoffSeconds == 0 {
		c.PodMaxBackoffSeconds = max(DefaultPodMaxBackoffSeconds, c.PodInitialBackoffSeconds)
	}
	if c.PodMaxInUnschedulablePodsDuration.Duration == 0 {
		c.PodMaxInUnschedulablePodsDuration.Duration = DefaultPodMaxInUnschedulable
	}
	if c.Parallelism == 0 {
		c.Parallelism = int32(runtime.NumCPU())
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []Profile{{}}
	}
	for i := range c.Profiles {
		if c.Profiles[i].SchedulerName == "" {
			c.Profiles[i].SchedulerName = DefaultSchedulerName
		}
	}
}

// InitialBackoff is PodInitialBackoffSeconds as a duration.
func (c *Config) InitialBackoff() time.Duration {
	return time.Duration(c.PodInitialBackoffSeconds) * time.Second
}

// MaxBackoff is PodMaxBackoffSeconds as a duration.
func (c *Config) MaxBackoff() time.Duration {
	return time.Duration(c.PodMaxBackoffSeconds) * time.Second
}
