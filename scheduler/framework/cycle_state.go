package framework

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
)

// StateKey names a plugin's entry in the CycleState.
type StateKey string

// StateData is what a plugin computes in PreFilter or PreScore for its
// later phases. Clone must deep-copy whatever AddPod/RemovePod change, so
// preemption's dry runs do not disturb the real cycle.
type StateData interface {
	Clone() StateData
}

// CycleState carries plugin data through one scheduling cycle. It is
// written only by the single-threaded phases (PreFilter, PreScore) and
// read concurrently by Filter and Score, so it needs no lock.
type CycleState struct {
	data map[StateKey]StateData
	// SkipFilterPlugins are the plugins whose PreFilter returned Skip.
	SkipFilterPlugins sets.Set[string]
	// SkipScorePlugins are the plugins whose PreScore returned Skip.
	SkipScorePlugins sets.Set[string]
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: map[StateKey]StateData{}}
}

// Write stores a plugin's data.
func (c *CycleState) Write(key StateKey, v StateData) { c.data[key] = v }

// Read returns a plugin's data, or an error if its PreFilter or PreScore
// did not run (a wiring bug, reported as an internal error).
func (c *CycleState) Read(key StateKey) (StateData, error) {
	v, ok := c.data[key]
	if !ok {
		return nil, fmt.Errorf("framework: no %q in cycle state", key)
	}
	return v, nil
}

// Clone deep-copies the state.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	n := &CycleState{data: make(map[StateKey]StateData, len(c.data))}
	for k, v := range c.data {
		n.data[k] = v.Clone()
	}
	if c.SkipFilterPlugins != nil {
		n.SkipFilterPlugins = c.SkipFilterPlugins.Clone()
	}
	if c.SkipScorePlugins != nil {
		n.SkipScorePlugins = c.SkipScorePlugins.Clone()
	}
	return n
}
