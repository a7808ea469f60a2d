// Package network is the node's pod network, host-gw style: a bridge
// (cairn0) holding the first address of the node's podCIDR, one veth per
// pod sandbox into it with an address from that podCIDR, one route per
// peer node (its podCIDR via its InternalIP), and masquerading of pod
// traffic leaving the cluster CIDR. Egress keeps the same forwarding and
// masquerading rules for pods something else attaches (containerd's CNI
// bridge, under the CRI runtime).
//
// Everything happens in one network namespace, the node's: by default
// the one the process runs in, so that several agents on one machine,
// each in its own namespace, never touch each other or the host's.
// Addresses are allocated host-local style, one file per address under
// the state directory, so an agent restart neither leaks nor reuses them.
package network
