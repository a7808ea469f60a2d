// Package linearizability checks a real three-replica cairn store against the
// etcd v3 semantics its clients rely on while faults hit it: leader crashes,
// minority, majority and three-way partitions, and a paused process.
//
// The test starts real `cairn server` processes, each on its own loopback
// address so that iptables rules on lo can cut the Raft traffic between any
// two of them. Concurrent clients run Put, linearizable Get and
// compare-and-swap on a few keys; porcupine then decides whether the
// recorded history is linearizable. A watcher that resumes across replicas
// must see exactly the committed history, and every acknowledged write must
// survive.
//
// Run it with `go test ./test/linearizability/ -run . -v` (it is skipped with
// -short). CAIRN_BIN names the server binary; without it the test builds one.
// Partition faults need root and iptables: without them the test skips those
// faults, unless CAIRN_REQUIRE_PRIVILEGED=1, which turns the skip into a
// failure. On a failure the server logs are kept; set CAIRN_LIN_KEEP_DATA=1
// to keep the data dirs too, for reading the Raft logs afterwards.
package linearizability
