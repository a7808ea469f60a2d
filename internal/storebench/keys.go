package storebench

import (
	"fmt"
	"strconv"
	"strings"
)

// keyOf names key i of the put/get keyspace, zero-padded to size bytes so
// that every key has the same length and keys sort in index order.
func keyOf(i, size int) string {
	head := keyPrefix + "k/"
	digits := strconv.Itoa(i)
	if pad := size - len(head) - len(digits); pad > 0 {
		return head + strings.Repeat("0", pad) + digits
	}
	return head + digits
}

// failoverPrefix is the range that holds every key written by one failover
// writer; verification reads it back in one paginated range.
func failoverPrefix(writer int) string {
	return fmt.Sprintf("%sf/%04d/", keyPrefix, writer)
}

// failoverKey names write seq of a failover writer. The sequence is padded to
// a fixed width so that a range read returns a writer's keys in order.
func failoverKey(writer int, seq int64) string {
	return fmt.Sprintf("%s%010d", failoverPrefix(writer), seq)
}

// failoverSeq parses the sequence number back out of a failover key.
func failoverSeq(key string, writer int) (int64, error) {
	rest, ok := strings.CutPrefix(key, failoverPrefix(writer))
	if !ok {
		return 0, fmt.Errorf("storebench: key %q is not a key of failover writer %d", key, writer)
	}
	return strconv.ParseInt(rest, 10, 64)
}

// valueFor derives a value of size bytes from its key, so that verification
// can tell a lost or overwritten write from the one that was acknowledged
// without keeping every value in memory.
func valueFor(key string, size int) []byte {
	v := make([]byte, size)
	for i := range v {
		v[i] = key[i%len(key)]
	}
	return v
}
