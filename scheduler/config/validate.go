package config

import (
	"errors"
	"fmt"
	"strings"

	"cairn/scheduler/plugins/names"
)

// Validate checks a defaulted configuration and says what to change.
func (c *Config) Validate() error {
	var errs []error
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		errs = append(errs, fmt.Errorf("config: percentageOfNodesToScore %d: want 0 (adaptive) to 100", c.PercentageOfNodesToScore))
	}
	if c.PodInitialBackoffSeconds <= 0 {
		errs = append(errs, fmt.Errorf("config: podInitialBackoffSeconds %d: want more than 0", c.PodInitialBackoffSeconds))
	}
	if c.PodMaxBackoffSeconds < c.PodInitialBackoffSeconds {
		errs = append(errs, fmt.Errorf("config: podMaxBackoffSeconds %d: want at least podInitialBackoffSeconds (%d)", c.PodMaxBackoffSeconds, c.PodInitialBackoffSeconds))
	}
	if c.PodMaxInUnschedulablePodsDuration.Duration < 0 {
		errs = append(errs, fmt.Errorf("config: podMaxInUnschedulablePodsDuration %s: want a positive duration", c.PodMaxInUnschedulablePodsDuration.Duration))
	}
	if c.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("config: parallelism %d: want 0 (number of CPUs) or more", c.Parallelism))
	}
	seen := map[string]int{}
	for i := range c.Profiles {
		p := &c.Profiles[i]
		if j, dup := seen[p.SchedulerName]; dup {
			errs = append(errs, fmt.Errorf("config: profiles[%d]: schedulerName %q is already used by profiles[%d]", i, p.SchedulerName, j))
		}
		seen[p.SchedulerName] = i
		errs = append(errs, p.validate(i)...)
	}
	return errors.Join(errs...)
}

func (p *Profile) validate(i int) []error {
	known := map[string]bool{}
	for _, n := range names.All() {
		known[n] = true
	}
	where := fmt.Sprintf("config: profiles[%d] (%s)", i, p.SchedulerName)
	unknown := func(list string, j int, name string) error {
		return fmt.Errorf("%s: plugins.%s[%d]: unknown plugin %q; known plugins are %s", where, list, j, name, strings.Join(names.All(), ", "))
	}
	var errs []error
	for j, pl := range p.Plugins.Disabled {
		if pl.Name != "*" && !known[pl.Name] {
			errs = append(errs, unknown("disabled", j, pl.Name))
		}
	}
	for j, pl := range p.Plugins.Enabled {
		if !known[pl.Name] {
			errs = append(errs, unknown("enabled", j, pl.Name))
		}
		if pl.Weight < 0 || pl.Weight > MaxWeight {
			errs = append(errs, fmt.Errorf("%s: plugins.enabled[%d] %s: weight %d: want 0 (default) to %d", where, j, pl.Name, pl.Weight, MaxWeight))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	var sorts int
	for _, pl := range p.EffectivePlugins() {
		if pl.Name == names.PrioritySort {
			sorts++
		}
	}
	if sorts != 1 {
		errs = append(errs, fmt.Errorf("%s: exactly one queue sort plugin must be enabled (%s)", where, names.PrioritySort))
	}
	return errs
}
