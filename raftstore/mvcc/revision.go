package mvcc

// Revision is a point in the store's history: one Main per transaction, one
// Sub per operation inside it.
type Revision struct{ Main, Sub int64 }

// Less reports whether r comes before o in the store's history.
func (r Revision) Less(o Revision) bool {
	if r.Main != o.Main {
		return r.Main < o.Main
	}
	return r.Sub < o.Sub
}

// compare orders revisions for slices.SortFunc.
func (r Revision) compare(o Revision) int {
	switch {
	case r.Less(o):
		return -1
	case o.Less(r):
		return 1
	}
	return 0
}
