// Package helper is the side of the embedded container runtime that
// runs outside the agent, and the agent's side of its contract with the
// container shim: the spec and state files they share, StartShim and
// the attach protocol's client.
//
//   - the container shim, cairn-shim, is a small static C program (see
//     node/runtime/embedded/shim), run as `cairn-shim __container-shim
//     DIR` by StartShim. It builds and supervises one container. On a
//     thread of its own it enters the sandbox's network namespace and new
//     mount, UTS and IPC namespaces, mounts the root filesystem, /dev,
//     /sys, /etc/hosts and the volumes, and pivots into it; then it
//     vforks the container's first process, which moves itself into the
//     container's cgroups, mounts /proc in its new PID namespace, drops
//     privileges and execs the command. It copies the container's stdout
//     and stderr into the CRI log file, and records its exit in the
//     container's state file. It holds the container's stdin when the
//     container has one, and its terminal when it has a tty, and serves
//     attached clients on a socket in the container's directory (see
//     AttachSocket), where the agent also asks it to reopen the log file
//     after a rotation. It runs in its own session and ignores the
//     signals of a stop, so containers keep running when the agent
//     stops; a restarted agent adopts them from the state on disk, and
//     attaches to them through their shims.
//   - the exec helper runs a command in a running container (ExecSync)
//     after joining its namespaces and cgroups, and the pod init keeps a
//     pod's shared PID namespace. The agent runs them as a small Go
//     binary, cairn-helper (or, failing that, as its own binary), with a
//     hidden first argument that MaybeRun recognises.
//
// Every exec runs this code once, so the package imports only the
// standard library, golang.org/x/sys/unix and the cgroups leaf package:
// package initialisation of the agent's dependencies would cost each
// exec more than the work itself. The agent converts its CRI objects
// into the plain Spec before they reach the shim.
package helper
