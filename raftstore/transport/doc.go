// Package transport carries the traffic between store replicas: a TLS
// listener that refuses anyone without a certificate from the cluster CA and
// says why, a mux that shares one peer port between raft and an internal
// gRPC service, a hashicorp/raft StreamLayer over mutual TLS, and the gRPC
// dial options to reach a peer's internal service the same way.
//
// Every piece accepts a nil *tls.Config, meaning plain TCP, for clusters run
// with --insecure during development.
package transport
