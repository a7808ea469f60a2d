// Package lossbench measures the agents' failure detector the way it is
// tuned for: members of a memberlist cluster configured with
// gossip.Timings, on a network that drops a share of all packets, are
// watched for false deaths (a live member declared dead, which would make
// its node NotReady), and killed one at a time to measure how fast their
// peers declare them dead.
//
// The members run in one process, in a network namespace of their own
// whose loopback drops packets at random through an iptables statistic
// rule (the kernels Cairn runs on often lack tc's netem). Killing a member
// closes its sockets without a leave, as kill -9 does. It needs root.
//
// Run it with `go run ./node/gossip/lossbench/gossiploss -period 5m`.
package lossbench
