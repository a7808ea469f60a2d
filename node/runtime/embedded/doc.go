// Package embedded is the default container runtime: it implements the
// CRI-shaped runtime.Runtime in process, with no daemon.
//
// Each pod sandbox is a network namespace, bind mounted under the netns
// directory so that it outlives the agent, attached to the node's pod
// network, and an IPC namespace (bind mounted beside it) with a tmpfs
// that its containers share as /dev/shm, unless the pod uses the host's.
// Each container is a process in its own mount, PID and UTS namespaces,
// joined to its sandbox's network and IPC namespaces, pivot_root'ed into
// an overlay (or a copy) of its image's unpacked root filesystem, and
// placed in cgroups under the configured cgroup root. The PID namespace
// is shared instead when the CRI asks: the host's (hostPID), the pod's
// (shareProcessNamespace: a small init started with the sandbox keeps it
// and reaps its orphans) or another container's (an ephemeral
// container's target).
//
// Helper processes do the work the agent cannot do safely from a
// multi-threaded Go process. The shim that builds and supervises a
// container, which every container start runs, is a small static C
// program, cairn-shim (its sources are in the shim directory; make build
// builds it beside the agent, where Config.ShimBinary defaults to):
// without it, containers cannot be created. The exec helper and the init
// of a pod's shared PID namespace live in the helper subpackage, which
// the small cairn-helper binary runs; without that binary beside the
// agent's, the agent's own binary is run again with a hidden first
// argument, which is why the agent's main (and the TestMain of any test
// that starts containers) must call MaybeRunInit first thing. This
// package converts the CRI's objects into the plain helper.Spec, which
// reaches the shim as spec.json, so that neither helper needs the
// agent's dependencies.
//
// On disk, under the state directory:
//
//	sandboxes/<id>/sandbox.json   the CRI config, netns, IP and state
//	sandboxes/<id>/{hosts,hostname,resolv.conf}
//	sandboxes/<id>/pod-init.log   the shared PID namespace's init, if any,
//	sandboxes/<id>/pod-init-root  and the empty root it is confined to
//	sandboxes/<id>/shm            the tmpfs the containers share as /dev/shm
//	containers/<id>/container.json the CRI config and image
//	containers/<id>/spec.json     what the shim needs to build the container
//	containers/<id>/state.json    pid, start and exit, written by the shim
//	containers/<id>/attach.sock   the shim's attach socket, while the container runs
//	containers/<id>/{rootfs,upper,work}  overlay mount point and layers
//	containers/<id>/shim.log      the shim's own diagnostics
package embedded
