// Package storage keeps API objects in the raftstore (or any etcd v3 API
// store): Kubernetes protobuf values under /registry/<resource>/<ns>/<name>,
// resourceVersion = store revision, optimistic concurrency through
// compare-and-swap transactions, and a watch cache per resource type that
// serves list and watch from memory.
//
// One Store serves one resource. Its watch cache holds every object,
// decoded once, and a window of recent events; it is fed by a single store
// watch whatever the number of API watchers, and resumes that watch from
// the last revision after a break (a lost leader, a replica going away),
// so API watches neither end nor miss events. Reads pick their source from
// the resourceVersion the client asks for, as Kubernetes does: a
// consistent read is served by the cache once it has caught up with the
// store's current revision (learnt through a linearizable read and store
// progress notifications), an exact past revision by the store.
//
// RunCompactor trims the store's history, which bounds how old a
// resourceVersion or continue token may be before it gets 410 Gone.
package storage
