// Package runtime is the interface between the kubelet and a container
// runtime. It is the Container Runtime Interface (k8s.io/cri-api v1) minus
// gRPC: the cri runtime forwards each call to containerd over its socket,
// and the embedded runtime implements them in process. The kubelet never
// knows which one it drives.
package runtime

import (
	"context"
	"io"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime runs pod sandboxes (a pod's network namespace and shared
// state) and their containers.
type Runtime interface {
	Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error)

	RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error)
	StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error)
	RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error)
	PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error)
	ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error)

	CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error)
	StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error)
	StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error)
	RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error)
	ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error)
	ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error)
	UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error)
	ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error)
	ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error)

	// UpdateRuntimeConfig passes the node's podCIDR once it is known.
	UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error)

	ImageService
	Streamer
}

// Streamer runs interactive commands in containers and forwards
// connections into pods: the kubelet API's exec and portForward. CRI
// leaves both to a runtime's own streaming server; here they are calls
// on streams, so the kubelet API serves them the same way for every
// runtime.
type Streamer interface {
	// Exec runs req.Cmd in a running container with the given streams
	// until it exits or ctx ends, and returns its exit code. An error
	// means the command could not run or its streams broke.
	Exec(ctx context.Context, req ExecRequest) (exitCode int, err error)
	// PortForward connects conn to port on the pod sandbox's loopback
	// (inside the pod's network namespace) and copies both ways until
	// either side closes or ctx ends. It closes conn.
	PortForward(ctx context.Context, sandboxID string, port int32, conn io.ReadWriteCloser) error
	// Attach connects the given streams to a running container's own
	// process (kubectl attach, kubectl run -it): its output from now on
	// to Stdout and Stderr, and Stdin to its stdin when the container
	// was created with stdin (CRI ContainerConfig.Stdin; with StdinOnce
	// the container's stdin closes when the first attached client's
	// stdin ends). TTY must match the container's CRI ContainerConfig.Tty.
	// It returns when the container exits, ctx ends or, without output
	// streams, Stdin ends.
	Attach(ctx context.Context, req AttachRequest) error
}

// AttachRequest is a running container to attach to and the streams.
// Stdin, Stdout and Stderr are nil when not attached; with TTY, Stderr
// is unused and Resize carries terminal size changes.
type AttachRequest struct {
	ContainerID    string
	TTY            bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Resize         <-chan TerminalSize
}

// ExecRequest is a command to run in a container and its streams.
type ExecRequest struct {
	ContainerID string
	Cmd         []string
	// TTY runs the command on a terminal: Stdout then carries its
	// output and Stderr is unused.
	TTY bool
	// Stdin, Stdout and Stderr are nil when not attached.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Resize, with TTY, carries terminal size changes; nil if none.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Width, Height uint16
}

// ImageService stores and pulls images.
type ImageService interface {
	ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error)
	ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error)
	RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error)
}

// IPCSysctl reports whether a sysctl belongs to an IPC namespace (as
// net.* ones belong to a network namespace): a pod's own, unless it
// uses the host's.
func IPCSysctl(name string) bool {
	for _, p := range []string{"kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
