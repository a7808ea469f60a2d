// Package storage keeps API objects in the raftstore (or any etcd v3 API
// store): Kubernetes protobuf values under /registry/<resource>/<ns>/<name>,
// resourceVersion = store revision, optimistic concurrency through
// compare-and-swap transactions, and a watch cache per resource type that
// serves list and watch from memory.
package storage
