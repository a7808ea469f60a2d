package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"cairn/internal/atomicfile"
	"cairn/node/runtime/embedded/cgroups"
)

// Spec is everything the shim and the exec helper need to build and
// enter a container. The agent writes it, as spec.json in the
// container's directory, when it creates the container. Its JSON names
// are shared with running shims of older agents, and read by the C shim
// (node/runtime/embedded/shim/spec.c): do not change them.
type Spec struct {
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
	// (upper and work in the container directory) or a copy of it (in
	// copy).
	Overlay        bool    `json:"overlay"`
	ReadonlyRootfs bool    `json:"readonlyRootfs,omitempty"`
	Privileged     bool    `json:"privileged,omitempty"`
	NoNewPrivs     bool    `json:"noNewPrivs,omitempty"`
	Mounts         []Mount `json:"mounts,omitempty"`
	// Caps are the capability numbers the process keeps.
	Caps          []int         `json:"caps"`
	MaskedPaths   []string      `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string      `json:"readonlyPaths,omitempty"`
	Cgroups       cgroups.Paths `json:"cgroups"`
	LogPath       string        `json:"logPath,omitempty"`
	StopSignal    int           `json:"stopSignal"`
	OOMScoreAdj   int64         `json:"oomScoreAdj,omitempty"`
	// Stdin gives the container's process a stdin that attached clients
	// write to (CRI ContainerConfig.Stdin); without it, its stdin is
	// /dev/null. StdinOnce closes that stdin when the first attached
	// client that wrote to it ends its input.
	Stdin     bool `json:"stdin,omitempty"`
	StdinOnce bool `json:"stdinOnce,omitempty"`
	// TTY runs the process on a pseudo-terminal, as its controlling
	// terminal and its stdin, stdout and stderr.
	TTY bool `json:"tty,omitempty"`
	// PIDNamespaceOf, when set, is a process whose PID namespace the
	// container's process joins instead of getting one of its own: the
	// target container of an ephemeral one.
	PIDNamespaceOf *Process `json:"pidNamespaceOf,omitempty"`
	// HostPID runs the container's process in the host's PID namespace
	// (a pod with hostPID), where its /proc shows every process.
	HostPID bool `json:"hostPID,omitempty"`
	// IPCNS is the IPC namespace the container joins, its pod's, and Shm
	// the directory bind mounted on its /dev/shm, the pod's; without
	// them, the container gets an IPC namespace and a /dev/shm of its
	// own, or with HostIPC the host's.
	IPCNS   string `json:"ipcns,omitempty"`
	Shm     string `json:"shm,omitempty"`
	HostIPC bool   `json:"hostIPC,omitempty"`
}

// Process names a process for as long as it lives: its PID and its
// start time, which tells it from a later process given the same PID.
type Process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Mount is a bind mount from the host into the container.
type Mount struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Readonly    bool   `json:"readonly,omitempty"`
	Propagation string `json:"propagation,omitempty"` // private, rslave or rshared
}

// State is the life of a container's process, as its shim records it
// in state.json (shim/state.c writes the same names), and as the agent
// does when it finds the shim gone.
type State struct {
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
	// SocketReopenOnly says the shim reopens its log only when asked
	// over its attach socket. It ignores SIGUSR1, which older shims
	// reopen on, unless it could not make the socket.
	SocketReopenOnly bool `json:"socketReopenOnly,omitempty"`
}

// Exit reasons of the CRI, as State.Reason.
const (
	ReasonCompleted  = "Completed"
	ReasonError      = "Error"
	ReasonOOMKilled  = "OOMKilled"
	ReasonStartError = "StartError"
	ReasonUnknown    = "Unknown"
)

// ReadSpec reads the spec.json in a container's directory.
func ReadSpec(dir string) (Spec, error) {
	var sp Spec
	err := ReadJSON(filepath.Join(dir, "spec.json"), &sp)
	return sp, err
}

// WriteSpec writes the spec.json in a container's directory.
func WriteSpec(dir string, sp *Spec) error {
	return WriteJSON(filepath.Join(dir, "spec.json"), sp)
}

// ReadState reads a container's state.json; ok is false when the
// container was never started.
func ReadState(dir string) (st State, ok bool, err error) {
	err = ReadJSON(filepath.Join(dir, "state.json"), &st)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, false, nil
	}
	return st, err == nil, err
}

// WriteState replaces a container's state.json.
func WriteState(dir string, st State) error {
	return WriteJSON(filepath.Join(dir, "state.json"), st)
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("helper: %s: %w", path, err)
	}
	return nil
}

// WriteJSON replaces path atomically with v in JSON: readers (a shim
// and the agent read each other's files) never see half a file, and a
// crash leaves the old or the new one.
func WriteJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("helper: %w", err)
	}
	return atomicfile.Write(path, raw, 0o600, false)
}
