// Package localcluster starts a cluster of real server processes, etcd or
// cairn, on loopback, so that the store benchmark and its tests can measure
// both under identical conditions. Each member writes a pid file, which is
// what a kill command in the failover workload uses to find it.
package localcluster
