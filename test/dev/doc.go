// Package dev tests `cairn dev` as a user runs it: the real binary starts
// a local HA cluster (three servers, two agents in network namespaces,
// the demo Deployment and Service), the test reaches the demo through its
// ClusterIP and by its name (the nodes' DNS) from a pod, scales the demo down to one pod and checks that
// only that pod answers, kills the leader server, and checks that
// `cairn dev down` leaves nothing behind on the host.
//
// It needs root (network namespaces, cgroups, eBPF): without it the test
// skips, unless CAIRN_REQUIRE_PRIVILEGED=1, when it fails. It uses the
// binary named by CAIRN_BIN (`make test` sets it to bin/cairn), or builds
// one.
package dev
