// Package cri runs pods through containerd: it implements runtime.Runtime
// by forwarding each call to containerd's CRI v1 gRPC API (the
// RuntimeService and ImageService) over its unix socket. containerd
// creates the sandboxes' network namespaces and sets them up with CNI,
// from the bridge configuration this package writes (WriteCNIConfig), and
// writes the containers' logs, in the CRI format, at the paths the kubelet
// passes.
//
// The agent uses it with `--runtime cri --cri-socket
// unix:///run/containerd/containerd.sock`; the default, embedded runtime
// needs no daemon.
package cri
