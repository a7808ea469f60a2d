package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// sandboxRecord is a sandbox as stored in sandbox.json.
type sandboxRecord struct {
	ID string `json:"id"`
	// Config is the CRI PodSandboxConfig, in protobuf JSON.
	Config    json.RawMessage `json:"config"`
	CreatedAt int64           `json:"createdAt"`
	// NetNS is the path of the sandbox's network namespace; empty for
	// pods on the host network.
	NetNS          string `json:"netns,omitempty"`
	IP             string `json:"ip,omitempty"`
	Ready          bool   `json:"ready"`
	Hostname       string `json:"hostname"`
	RuntimeHandler string `json:"runtimeHandler,omitempty"`

	labels labelCache
}

// containerRecord is a container as stored in container.json.
type containerRecord struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandboxId"`
	// Config is the CRI ContainerConfig, in protobuf JSON.
	Config    json.RawMessage `json:"config"`
	CreatedAt int64           `json:"createdAt"`
	// Image is the image as the kubelet named it; ImageID is the image's
	// config digest and ImageRef its repository digest, or its ID.
	Image    string `json:"image"`
	ImageID  string `json:"imageId"`
	ImageRef string `json:"imageRef"`
	LogPath  string `json:"logPath,omitempty"`

	labels labelCache
}

// labelCache holds a record's labels, decoded from its Config once: the
// kubelet lists a pod's sandboxes and containers by label on every sync,
// and decoding every record's whole config each time made a node's
// syncs quadratic in its pods.
type labelCache struct {
	p atomic.Pointer[map[string]string]
}

// get returns the cached labels, decoding them with decode the first
// time. The map is shared: callers must not change it.
func (l *labelCache) get(decode func() map[string]string) map[string]string {
	if m := l.p.Load(); m != nil {
		return *m
	}
	m := decode()
	l.p.Store(&m)
	return m
}

// spec is everything the shim, the init and the exec helper need to
// build and enter a container. The agent writes it at creation.
type spec struct {
	ID       string   `json:"id"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	Cwd      string   `json:"cwd"`
	UID      uint32   `json:"uid"`
	GID      uint32   `json:"gid"`
	Groups   []uint32 `json:"groups,omitempty"`
	Hostname string   `json:"hostname"`
	// EtcDir holds the sandbox's hosts, hostname and resolv.conf.
	EtcDir    string `json:"etcDir,omitempty"`
	NetNS     string `json:"netns,omitempty"`
	ImageRoot string `json:"imageRoot"`
	// Overlay says whether the root filesystem is an overlay of ImageRoot
	// (upper and work in the container directory) or a copy of it.
	Overlay        bool        `json:"overlay"`
	ReadonlyRootfs bool        `json:"readonlyRootfs,omitempty"`
	Privileged     bool        `json:"privileged,omitempty"`
	NoNewPrivs     bool        `json:"noNewPrivs,omitempty"`
	Mounts         []mountSpec `json:"mounts,omitempty"`
	// Caps are the capability numbers the process keeps.
	Caps          []int       `json:"caps"`
	MaskedPaths   []string    `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string    `json:"readonlyPaths,omitempty"`
	Cgroups       cgroupPaths `json:"cgroups"`
	LogPath       string      `json:"logPath,omitempty"`
	StopSignal    int         `json:"stopSignal"`
	OOMScoreAdj   int64       `json:"oomScoreAdj,omitempty"`
}

// mountSpec is a bind mount from the host into the container.
type mountSpec struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Readonly    bool   `json:"readonly,omitempty"`
	Propagation string `json:"propagation,omitempty"` // private, rslave or rshared
}

// procState is the life of a container's process, as the shim records
// it in state.json.
type procState struct {
	ShimPID   int    `json:"shimPid"`
	ShimStart uint64 `json:"shimStart"`
	PID       int    `json:"pid,omitempty"`
	PIDStart  uint64 `json:"pidStart,omitempty"`
	// Running is true from the exec of the command to its exit.
	Running    bool   `json:"running"`
	StartedAt  int64  `json:"startedAt,omitempty"`
	FinishedAt int64  `json:"finishedAt,omitempty"`
	ExitCode   int32  `json:"exitCode"`
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	// LogReopens counts the log reopens the shim did, so that the agent
	// can wait for the one it asked for.
	LogReopens int `json:"logReopens"`
}

// Exit reasons of the CRI.
const (
	reasonCompleted  = "Completed"
	reasonError      = "Error"
	reasonOOMKilled  = "OOMKilled"
	reasonStartError = "StartError"
	reasonUnknown    = "Unknown"
)

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("embedded: %s: %w", path, err)
	}
	return nil
}

// writeJSON replaces path atomically: readers never see half a file,
// and a crash leaves the old or the new one.
func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	_, err = tmp.Write(raw)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("embedded: %w", err)
	}
	return nil
}

// readState reads a container's state.json; ok is false when the
// container was never started.
func readState(dir string) (st procState, ok bool, err error) {
	err = readJSON(filepath.Join(dir, "state.json"), &st)
	if errors.Is(err, os.ErrNotExist) {
		return procState{}, false, nil
	}
	return st, err == nil, err
}

func writeState(dir string, st procState) error {
	return writeJSON(filepath.Join(dir, "state.json"), st)
}
