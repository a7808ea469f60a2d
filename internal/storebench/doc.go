// Package storebench measures any cluster that speaks the etcd v3 API, through
// the official etcd client, so that Cairn's store and real etcd are measured by
// the same code: put throughput and latency with many clients and with one,
// linearizable and serializable get throughput, and write unavailability across
// a leader kill together with a check that no acknowledged write was lost.
//
// Every workload is closed-loop: each client sends its next request as soon as
// the previous one is answered, so throughput and latency are two views of the
// same run.
package storebench
