package mvcc

import (
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// logEnt is one change in revision order: the record written and the key's
// live value just before it (nil if none), which PrevKV watchers need.
type logEnt struct {
	kv, prev *mvccpb.KeyValue
}

// logChunk is the size of one revLog chunk: large enough to amortize the
// allocation, small enough that appends never copy a big array.
const logChunk = 1024

// revLog holds every change with Main >= the compact revision, in (Main, Sub)
// order. Watchers replay from it, and compaction walks it to find the keys
// that changed since the previous compaction instead of scanning them all.
// It is stored in fixed-size chunks so that appending never copies the whole
// log and truncating from the front frees memory chunk by chunk.
type revLog struct {
	chunks [][]logEnt
	head   int // index of the first kept entry in chunks[0]
}

// len returns the number of entries.
func (l *revLog) len() int {
	if len(l.chunks) == 0 {
		return 0
	}
	return (len(l.chunks)-1)*logChunk + len(l.chunks[len(l.chunks)-1]) - l.head
}

func (l *revLog) append(e logEnt) {
	if n := len(l.chunks); n == 0 || len(l.chunks[n-1]) == logChunk {
		l.chunks = append(l.chunks, make([]logEnt, 0, logChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, e)
}

// at returns entry i, counting from the oldest kept one.
func (l *revLog) at(i int) logEnt {
	i += l.head
	return l.chunks[i/logChunk][i%logChunk]
}

// search returns the index of the first entry with Main >= main.
func (l *revLog) search(main int64) int {
	return sort.Search(l.len(), func(i int) bool { return l.at(i).kv.ModRevision >= main })
}

// truncateBefore drops the entries with Main < main.
func (l *revLog) truncateBefore(main int64) {
	n := l.search(main)
	if n == 0 {
		return
	}
	h := l.head + n
	drop := h / logChunk
	if drop == len(l.chunks) {
		// Everything went: start afresh rather than keep an empty tail chunk.
		*l = revLog{}
		return
	}
	clear(l.chunks[:drop])
	l.chunks = l.chunks[drop:]
	l.head = h % logChunk
	// Unreference dropped entries in the first chunk so their values can go.
	clear(l.chunks[0][:l.head])
}
