package devcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Process kinds in a RunState.
const (
	KindServer = "server"
	KindAgent  = "agent"
)

// RunState describes a running cluster, for Down, Status and Logs run
// from another terminal. The supervisor writes it as it starts children
// and removes it once everything is stopped and swept.
type RunState struct {
	// PID and StartTime identify the supervisor (`cairn dev`); the start
	// time (in clock ticks since boot) guards against a reused pid.
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
	// Dir is the state directory.
	Dir     string    `json:"dir"`
	Started time.Time `json:"started"`
	// Nodes says whether agents run; NoNodesReason says why not.
	Nodes         bool   `json:"nodes"`
	NoNodesReason string `json:"noNodesReason,omitempty"`
	// PortOffset is the Settings' port offset.
	PortOffset int `json:"portOffset"`
	// Processes are the servers and agents, in start order.
	Processes []Process `json:"processes"`
	// IPForwardWas holds the host's net.ipv4.ip_forward before the
	// supervisor turned it on, to be restored; empty if untouched.
	IPForwardWas string `json:"ipForwardWas,omitempty"`
}

// Process is one child of the supervisor.
type Process struct {
	// Name is the short name (s1, n1); Kind is KindServer or KindAgent.
	Name string `json:"name"`
	Kind string `json:"kind"`
	// PID and StartTime identify the process.
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
	// Log is its log file.
	Log string `json:"log"`
}

// Topology returns the layout of the cluster the state describes.
func (s *RunState) Topology() Topology { return NewTopology(s.PortOffset, s.Nodes) }

// Process returns the child by short name.
func (s *RunState) Process(name string) (Process, bool) {
	for _, p := range s.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return Process{}, false
}

// Running reports whether the process still runs: same pid, same start
// time.
func (p Process) Running() bool { return sameProcess(p.PID, p.StartTime) }

// ReadRunState reads the run state of the state directory dir; it
// returns nil and no error when no cluster was started there or the last
// one stopped cleanly.
func ReadRunState(dir string) (*RunState, error) {
	raw, err := os.ReadFile(Layout{Dir: dir}.RunState())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	var s RunState
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("devcluster: %s: %w", Layout{Dir: dir}.RunState(), err)
	}
	return &s, nil
}

// noAgents says why the cluster has no agents, if it has none.
func (s *RunState) noAgents() string {
	if s.Nodes {
		return "it has agents n1 and n2"
	}
	return "it runs its servers only: " + s.NoNodesReason
}

// SupervisorRunning reports whether the supervisor that wrote the state
// still runs.
func (s *RunState) SupervisorRunning() bool { return sameProcess(s.PID, s.StartTime) }

func (s *RunState) write() error { return writeJSON(Layout{Dir: s.Dir}.RunState(), s) }
