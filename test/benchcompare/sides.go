package main

import (
	"fmt"
	"slices"
	"strings"

	"cairn/internal/storebench/localcluster"
)

// knownLogStores are the Raft log stores cairn's --raft-log-store accepts;
// the harness checks them up front so that a typo fails before the etcd run,
// not a minute later.
const knownLogStores = "boltdb,wal"

// side is one cluster the harness measures: etcd, or cairn with one Raft log
// store.
type side struct {
	flavor localcluster.Flavor
	// logStore is cairn's --raft-log-store; empty for etcd.
	logStore string
}

// name identifies the side in directory names and logs, e.g. cairn-wal.
func (s side) name() string {
	if s.logStore == "" {
		return string(s.flavor)
	}
	return string(s.flavor) + "-" + s.logStore
}

// label names the side in the comparison table, e.g. "cairn wal".
func (s side) label() string {
	if s.logStore == "" {
		return string(s.flavor)
	}
	return string(s.flavor) + " " + s.logStore
}

// extraArgs are the server flags that make this side differ from the
// flavor's defaults.
func (s side) extraArgs() []string {
	if s.logStore == "" {
		return nil
	}
	return []string{"--raft-log-store", s.logStore}
}

// parseLogStores splits the -cairn-log-stores value, rejecting unknown and
// repeated stores.
func parseLogStores(v string) ([]string, error) {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			continue
		case !slices.Contains(strings.Split(knownLogStores, ","), s):
			return nil, fmt.Errorf("unknown raft log store %q in -cairn-log-stores: use %s", s, knownLogStores)
		case slices.Contains(out, s):
			return nil, fmt.Errorf("raft log store %q twice in -cairn-log-stores", s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-cairn-log-stores is empty: name at least one of %s", knownLogStores)
	}
	return out, nil
}

// cairnSides returns one cairn side per log store, in the given order.
func cairnSides(stores []string) []side {
	out := make([]side, len(stores))
	for i, s := range stores {
		out[i] = side{flavor: localcluster.Cairn, logStore: s}
	}
	return out
}

// sidesToRun returns the clusters to measure, in order: etcd first, then
// every cairn variant, or only one flavor's sides when only is set.
func sidesToRun(only string, stores []string) ([]side, error) {
	etcd := side{flavor: localcluster.Etcd}
	switch localcluster.Flavor(only) {
	case "":
		return append([]side{etcd}, cairnSides(stores)...), nil
	case localcluster.Etcd:
		return []side{etcd}, nil
	case localcluster.Cairn:
		return cairnSides(stores), nil
	}
	return nil, fmt.Errorf("-only %q: use etcd or cairn", only)
}
