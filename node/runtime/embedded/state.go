package embedded

import (
	"encoding/json"
	"sync/atomic"

	"cairn/node/runtime/embedded/helper"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
	// PodInit is the first process of the PID namespace the sandbox's
	// containers share, for a pod with shareProcessNamespace.
	PodInit *helper.Process `json:"podInit,omitempty"`
	// IPCNS is the path of the IPC namespace the sandbox's containers
	// share, and Shm the tmpfs directory that is their /dev/shm; both
	// empty for a pod on the host's IPC namespace.
	IPCNS string `json:"ipcns,omitempty"`
	Shm   string `json:"shm,omitempty"`

	decoded decodedConfig[runtimeapi.PodSandboxConfig]
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

	decoded decodedConfig[runtimeapi.ContainerConfig]
	// spec caches the container's spec.json, written once at creation:
	// the kubelet asks for a container's status on every sync.
	spec atomic.Pointer[helper.Spec]
	// state and shim answer what the container's process does.
	state stateCache
	shim  shimWatch
}

// decodedConfig holds a record's Config, decoded once: the kubelet lists
// and inspects a pod's sandboxes and containers on every sync, and
// decoding every record's whole config each time made a node's syncs
// quadratic in its pods and cost a burst of starts a tenth of the
// agent's CPU.
type decodedConfig[T any] struct {
	p atomic.Pointer[T]
}

// get returns the decoded config. The message is shared: callers must
// not change it (set replaces it).
func (d *decodedConfig[T]) get(raw json.RawMessage) *T {
	if cfg := d.p.Load(); cfg != nil {
		return cfg
	}
	cfg := new(T)
	// Configs are written by this package from valid messages; an
	// unreadable one yields an empty config, as before.
	protojson.Unmarshal(raw, any(cfg).(proto.Message))
	d.p.Store(cfg)
	return cfg
}

// set replaces the decoded config after the record's Config changed.
func (d *decodedConfig[T]) set(cfg *T) { d.p.Store(cfg) }
