package images

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// Normalize returns the canonical form of an image reference, as
// Kubernetes and containerd write it: "busybox" becomes
// "docker.io/library/busybox:latest", and a reference with a digest
// keeps the digest and drops any tag.
func Normalize(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("images: invalid image reference %q: %w", ref, err)
	}
	return named.String(), nil
}

// isDigest reports whether s is an image or manifest ID ("sha256:<hex>").
func isDigest(s string) bool {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// repoDigest returns "repository@digest" for a normalised reference.
func repoDigest(ref, digest string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("images: invalid image reference %q: %w", ref, err)
	}
	return named.Name() + "@" + digest, nil
}

// hasTag reports whether a normalised reference names a tag rather than
// a digest.
func hasTag(ref string) bool {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return false
	}
	_, ok := named.(reference.Tagged)
	return ok
}
