package mvcc

import "errors"

// Errors returned by the store. The gRPC layer maps them to etcd's status
// codes, so they are distinct values rather than formatted strings.
var (
	// ErrCompacted is returned for a revision that compaction has dropped.
	ErrCompacted = errors.New("mvcc: required revision has been compacted")
	// ErrFutureRev is returned for a revision the store has not reached yet.
	ErrFutureRev = errors.New("mvcc: required revision is a future revision")
	// ErrKeyNotFound is returned by a put with ignore_value or ignore_lease
	// on a key that does not exist.
	ErrKeyNotFound = errors.New("mvcc: key not found")
	// ErrLeaseNotFound is returned when a put or revoke names an unknown lease.
	ErrLeaseNotFound = errors.New("mvcc: lease not found")
	// ErrLeaseExists is returned when a lease ID is granted twice.
	ErrLeaseExists = errors.New("mvcc: lease already exists")
	// ErrInvalidLeaseID is returned when a lease is granted with ID 0, which
	// etcd reserves for "no lease".
	ErrInvalidLeaseID = errors.New("mvcc: lease ID must be non-zero")
	// ErrDuplicateKey is returned for a txn branch that writes one key twice.
	ErrDuplicateKey = errors.New("mvcc: duplicate key given in txn request")
	// ErrEmptyKey is returned for a request without a key.
	ErrEmptyKey = errors.New("mvcc: key is not provided")
	// ErrCorruptSnapshot is wrapped by every Restore error caused by the
	// stream itself (truncation, bad checksum, inconsistent records).
	ErrCorruptSnapshot = errors.New("mvcc: snapshot is corrupt or truncated")
)
