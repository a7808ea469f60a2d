// Package raftstore is Cairn's replicated store: an MVCC key-value state
// machine replicated with hashicorp/raft and served through the etcd v3 gRPC
// API, so that etcdctl, clientv3 and the Cairn API server can use it.
//
// It knows nothing of Kubernetes: keys and values are opaque bytes.
package raftstore
