// Package mvcc is the deterministic, in-memory state machine behind Cairn's
// etcd-v3-compatible store: a multi-version key-value map with etcd's
// revision, version, tombstone and compaction semantics, the lease table, and
// a watch hub that replays history and streams live changes.
//
// Threading model: the write methods (Put, DeleteRange, Txn, Compact,
// LeaseGrant, LeaseRevoke, Restore) are called from one goroutine, in Raft log
// order, on every replica. Given the same calls in the same order, every
// replica ends up with byte-identical state and returns identical results:
// nothing depends on time, randomness or map iteration order. The read
// methods (Range, Rev, HashKV, Leases, Watch, ...) may be called from any
// number of goroutines at the same time as the writer.
//
// Ownership: the store keeps the Key and Value byte slices of the requests it
// applies, and the *mvccpb.KeyValue messages it returns are shared with its
// own history. Callers must not modify either afterwards; marshaling them is
// fine.
package mvcc
