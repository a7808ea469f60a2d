// Package node is the agent that turns a machine into a Cairn node: kubelet
// pod workers, runtimes, pod network, probes, logs and gossip health.
package node
