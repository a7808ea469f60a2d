package raftstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// memberMeta is the identity a data dir belongs to. It is written once,
// when the member is created, and checked on every start so that a data dir
// is never used for another member or another cluster.
type memberMeta struct {
	Name      string `json:"name"`
	MemberID  uint64 `json:"member_id"`
	ClusterID uint64 `json:"cluster_id"`
	// Origin says how the member came to be: bootstrap, join or restore.
	Origin        string `json:"origin"`
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
	// ForcedNewCluster is set once the member was restarted alone with
	// --force-new-cluster (recover.go).
	ForcedNewCluster *forcedNewCluster `json:"forced_new_cluster,omitempty"`
}

const (
	originBootstrap = "bootstrap"
	originJoin      = "join"
	originRestore   = "restore"
)

const metaFile = "member.json"

// joinPKIDir is DATA/pki, where a server joining with a token keeps the
// CA it fetched.
const joinPKIDir = "pki"

// readMeta returns the data dir's identity, or ok=false for a new data dir.
func readMeta(dataDir string) (m memberMeta, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("raftstore: reading data dir identity: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, false, fmt.Errorf("raftstore: %s is corrupt (%v): restore the data dir from a snapshot, or remove it to join as a new member", filepath.Join(dataDir, metaFile), err)
	}
	return m, true, nil
}

func writeMeta(dataDir string, m memberMeta) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("raftstore: creating data dir: %w", err)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	tmp := filepath.Join(dataDir, metaFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("raftstore: writing data dir identity: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dataDir, metaFile))
}

// dataDirInUse reports whether dataDir holds anything besides an identity
// (and the PKI dir a server joining with a token fetched into DATA/pki
// before it starts): such a dir must not be bootstrapped again.
func dataDirInUse(dataDir string) bool {
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() != metaFile && e.Name() != joinPKIDir {
			return true
		}
	}
	return false
}

// Peer is one entry of --initial-cluster.
type Peer struct {
	Name    string
	Address string // host:port of the peer listener
}

// ParseInitialCluster parses "s1=host:port,s2=host:port". A URL scheme
// (https:// or http://) in front of an address is accepted and dropped.
func ParseInitialCluster(s string) ([]Peer, error) {
	var peers []Peer
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, addr, ok := strings.Cut(part, "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("--initial-cluster entry %q: want name=host:port, e.g. s1=10.0.0.1:2380", part)
		}
		addr = strings.TrimPrefix(strings.TrimPrefix(addr, "https://"), "http://")
		if !strings.Contains(addr, ":") {
			return nil, fmt.Errorf("--initial-cluster entry %q: address %q has no port", part, addr)
		}
		if seen[name] {
			return nil, fmt.Errorf("--initial-cluster names %q twice", name)
		}
		seen[name] = true
		peers = append(peers, Peer{Name: name, Address: addr})
	}
	if len(peers) == 0 {
		return nil, errors.New("--initial-cluster is empty")
	}
	return peers, nil
}

// clusterIDFor derives the cluster ID from the initial membership and token,
// as etcd does, so every bootstrapping member computes the same ID.
func clusterIDFor(peers []Peer, token string) uint64 {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.Name + "=" + p.Address
	}
	sort.Strings(parts)
	return hash64(strings.Join(parts, ",") + "|" + token)
}

// memberIDFor derives a member ID from its peer address and its cluster.
func memberIDFor(peerAddr string, clusterID uint64) uint64 {
	return hash64(fmt.Sprintf("%s|%016x", peerAddr, clusterID))
}

func hash64(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	id := binary.BigEndian.Uint64(sum[:8])
	if id == 0 {
		id = 1
	}
	return id
}
