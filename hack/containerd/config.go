// Package containerd carries the containerd configuration that Cairn's
// tests and CI run a private containerd with: config.toml, rendered by
// start.sh for shells and by Render for Go test helpers, so both start
// the same containerd.
package containerd

import (
	_ "embed"
	"strings"
)

// configTemplate is config.toml, with @PREFIX@ and @SANDBOX_IMAGE@ to fill.
//
//go:embed config.toml
var configTemplate string

// Render returns config.toml with every directory, socket and the CNI
// config directory under prefix, and sandboxImage as the pod sandbox image.
func Render(prefix, sandboxImage string) string {
	return strings.NewReplacer("@PREFIX@", prefix, "@SANDBOX_IMAGE@", sandboxImage).Replace(configTemplate)
}

// Paths of a containerd started with Render(prefix, ...), relative to prefix.
const (
	SocketFile = "containerd.sock"
	CNIConfDir = "cni/net.d"
)
