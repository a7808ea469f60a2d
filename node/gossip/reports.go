package gossip

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations this package writes on Nodes.
const (
	// ReportPrefix starts the key of each peer's report that a node is
	// dead; the reporter's name follows (ReportKey).
	ReportPrefix = "gossip.cairn.io/dead-by."
	// AddressAnnotation holds the node's gossip address, host:port, so
	// peers can join it without --gossip-join.
	AddressAnnotation = "gossip.cairn.io/address"
)

// maxNameLen is the longest name part of an annotation key.
const maxNameLen = 63

// ReportKey returns the annotation key of reporter's reports. A name too
// long for a key's name part is cut and completed with a hash of the whole,
// so two reporters never share a key.
func ReportKey(reporter string) string {
	name := "dead-by." + reporter
	if len(name) > maxNameLen {
		sum := sha256.Sum256([]byte(reporter))
		h := hex.EncodeToString(sum[:4])
		name = name[:maxNameLen-len(h)-1] + "-" + h
	}
	return "gossip.cairn.io/" + name
}

// Reporters returns the keys, without ReportPrefix, of the reports of
// node's death by its peers (for long names, a cut name and a hash),
// sorted. A report by the node itself does not count and is not listed.
func Reporters(node *corev1.Node) []string {
	if node == nil {
		return nil
	}
	self := ReportKey(node.Name)
	var out []string
	for k, v := range node.Annotations {
		if strings.HasPrefix(k, ReportPrefix) && k != self && v != "" {
			out = append(out, strings.TrimPrefix(k, ReportPrefix))
		}
	}
	sort.Strings(out)
	return out
}

// Agreed reports whether enough of node's peers reported it dead for the
// node lifecycle controller to mark it NotReady at once: at least two, or
// all of them when it has fewer than two. livePeers is how many other
// nodes have agents believed alive (say, the Ready nodes but node); with
// none, nobody can vouch and Agreed is false. One confused agent is never
// enough in a cluster of three or more.
func Agreed(node *corev1.Node, livePeers int) bool {
	if livePeers <= 0 {
		return false
	}
	return len(Reporters(node)) >= min(2, livePeers)
}

// annotationPatch is a JSON merge patch setting (non-nil) and removing
// (nil) annotations.
func annotationPatch(set map[string]*string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
}
