// Package apibench measures a Kubernetes API server through client-go, as
// real controllers and tools reach it: it creates many pods with concurrent
// clients spread over every server, then gets random pods, lists the whole
// namespace (in one response and in pages, as kubectl does), opens many
// watches and times how long one change takes to reach all of them, and
// samples each server's resident memory throughout. The report judges the
// figures against the control plane's performance targets.
//
// Request phases are closed-loop: each client sends its next request as soon
// as the previous one is answered, so throughput and latency are two views of
// the same run. At the end one deletecollection removes the namespace's
// pods, so the namespace should be the benchmark's own.
package apibench
