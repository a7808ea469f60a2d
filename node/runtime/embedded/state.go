package embedded

import (
	"encoding/json"
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
