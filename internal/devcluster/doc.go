// Package devcluster runs a whole Cairn cluster on one machine for
// development and demos: `cairn dev`.
//
// It starts three `cairn server` replicas and, as root, two `cairn agent`
// nodes, each a child process of the same binary with its log under the
// state directory. Each agent runs inside a network namespace of its own
// (cairn-dev-n1, cairn-dev-n2) joined to the host by the bridge cairn-dev0
// on 172.31.250.0/24, with its own cgroup root (/cairn-dev/n1), data
// directory, kubelet port and share of the machine's CPU and memory. The
// servers' API servers listen on the bridge (172.31.250.1-3:6443), so the
// agents reach them the way nodes reach a real control plane.
//
// Everything it creates on the host has a fixed name, so that stopping
// (Ctrl-C, or Down from another terminal) can sweep it all, even after a
// crash: the namespaces, the bridge, the cgroups, the mounts (pod network
// namespaces, volumes, the private bpf filesystem holding the agents'
// pinned eBPF links), the iptables rules and the processes. What survives
// is the state directory: the CA, the servers' data and the agents' data,
// so a restart finds the cluster as it was, as after a reboot.
//
// The demo image is built offline from the running binary (see
// BuildDemoImage) and imported into each agent's image store before the
// agents start.
package devcluster
