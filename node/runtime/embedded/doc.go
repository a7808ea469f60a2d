// Package embedded is the default container runtime: it implements the
// CRI-shaped runtime.Runtime in process, with no daemon.
//
// Each pod sandbox is a network namespace, bind mounted under the netns
// directory so that it outlives the agent, attached to the node's pod
// network. Each container is a process in its own mount, PID, UTS and IPC
// namespaces, joined to its sandbox's network namespace, pivot_root'ed
// into an overlay (or a copy) of its image's unpacked root filesystem,
// and placed in cgroups under the configured cgroup root.
//
// Three helper processes do the work the agent cannot do safely from a
// multi-threaded Go process. They are the agent's own binary run again
// with a hidden first argument, which is why the agent's main (and the
// TestMain of any test that starts containers) must call MaybeRunInit
// first thing:
//
//   - the shim supervises one container: it starts it, copies its stdout
//     and stderr into the CRI log file, and records its exit in the
//     container's state file. It runs in its own session, so containers
//     keep running when the agent stops; a restarted agent adopts them
//     from the state on disk.
//   - the container init runs inside the new namespaces: it mounts the
//     root filesystem, /proc, /dev, /sys, /etc/hosts and the volumes,
//     pivots into it, waits until the shim has placed it in its cgroups,
//     drops capabilities and privileges, and execs the container's
//     command.
//   - the exec helper runs a command in a running container (ExecSync)
//     after joining its namespaces and cgroups.
//
// On disk, under the state directory:
//
//	sandboxes/<id>/sandbox.json   the CRI config, netns, IP and state
//	sandboxes/<id>/{hosts,hostname,resolv.conf}
//	containers/<id>/container.json the CRI config and image
//	containers/<id>/spec.json     what the init needs to build the container
//	containers/<id>/state.json    pid, start and exit, written by the shim
//	containers/<id>/{rootfs,upper,work}  overlay mount point and layers
//	containers/<id>/shim.log      the shim's own diagnostics
package embedded
