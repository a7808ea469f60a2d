// Package node is the agent that turns a machine into a Cairn node: kubelet
// pod workers, runtimes, pod network, cluster DNS, probes, logs and gossip
// health.
package node
