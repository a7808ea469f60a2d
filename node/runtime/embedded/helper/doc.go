// Package helper is the side of the embedded container runtime that
// runs outside the agent: the container shim, the container init and
// the exec helper, and the state files they share with the agent.
//
// The agent runs them as a small binary, cairn-shim (or, failing that,
// as its own binary), with a hidden first argument that MaybeRun
// recognises:
//
//   - the shim supervises one container: it starts it, copies its stdout
//     and stderr into the CRI log file, and records its exit in the
//     container's state file. It holds the container's stdin when the
//     container has one, and its terminal when it has a tty, and serves
//     attached clients on a socket in the container's directory (see
//     AttachSocket). It runs in its own session, so containers keep
//     running when the agent stops; a restarted agent adopts them from
//     the state on disk, and attaches to them through their shims.
//   - the container init runs inside the new namespaces: it mounts the
//     root filesystem, /proc, /dev, /sys, /etc/hosts and the volumes,
//     pivots into it, makes the terminal of a tty container in the
//     container's own devpts and hands its master to the shim, waits
//     until the shim has placed it in its cgroups,
//     drops capabilities and privileges, and execs the container's
//     command.
//   - the exec helper runs a command in a running container (ExecSync)
//     after joining its namespaces and cgroups.
//
// Every container start runs this code three times (shim, init, and the
// init re-executed), so the package imports only the standard library,
// golang.org/x/sys/unix and the cgroups leaf package: package
// initialisation of the agent's dependencies would cost each start more
// than the work itself. The agent converts its CRI objects into the
// plain Spec before they reach this package.
package helper
