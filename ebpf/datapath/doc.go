// Package datapath loads Cairn's socket load-balancing BPF programs,
// attaches them to a cgroup v2 directory and programs their maps.
//
// It works on plain data: a Service is a frontend (address, port, protocol)
// with a list of backend addresses. The Kubernetes side lives in the parent
// package, which turns Services and EndpointSlices into this form.
//
// Writes are diffs against a mirror of the maps, and are ordered so that a
// program running concurrently never sees a half-written service: new
// backends first, then slots, then the master entry with the new count, and
// only then stale slots and backends are deleted. A service with no backend
// keeps its master entry with count 0, so connect() fails with ECONNREFUSED
// at once instead of timing out.
//
// Maps and links are pinned under Config.PinPath: when the process exits,
// the kernel keeps forwarding with the last programmed state, and the next
// Open picks the maps up again and swaps in its programs atomically.
package datapath
