// Package ebpf forwards Service traffic with socket-level load balancing:
// BPF programs in the cgroup socket hooks rewrite a connect() or sendmsg()
// to a ClusterIP into one to a backend, and translate the backend back in
// recvmsg() and getpeername(), so there is no per-packet NAT.
//
// Proxy is what the agent embeds: it watches Services and EndpointSlices,
// computes what the maps should hold, and hands that to the datapath
// sub-package, which loads the programs and writes the maps as diffs. The
// datapath itself knows nothing of Kubernetes.
package ebpf
