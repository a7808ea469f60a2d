package linearizability

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// opKind is the kind of client request an operation records.
type opKind uint8

const (
	opGet opKind = iota
	opPut
	opCAS
)

// kvInput is what a client asked for. Every written value is unique in a
// run, which is what lets the watch history tell whether a write whose
// response was lost took effect.
type kvInput struct {
	Kind  opKind
	Key   string
	Value string // opPut, opCAS: the value written
	// ExpectRev is the mod revision opCAS compares against (0: absent), the
	// way Kubernetes guards its updates.
	ExpectRev int64
}

// kvOutput is what the store answered.
type kvOutput struct {
	// Rev is the response header revision: for a write, the revision it
	// created.
	Rev int64
	// Succeeded is whether an opCAS compare held.
	Succeeded bool
	// Value and ModRev are what opGet, or a failed opCAS, read (ModRev 0:
	// absent).
	Value  string
	ModRev int64
}

// kvState is one key as the model sees it: the sequential specification
// of an etcd key is its value and the revision that last modified it.
type kvState struct {
	Value  string
	ModRev int64
}

// kvModel is the sequential specification porcupine checks each key's
// history against. Keys are independent objects, and linearizability is
// compositional, so partitioning the history by key loses nothing and keeps
// the search small; ordering across keys is checked by checkRevisionOrder.
func kvModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() any { return kvState{} },
		Step: func(state, input, output any) (bool, any) {
			return step(state.(kvState), input.(kvInput), output.(kvOutput))
		},
		DescribeOperation: func(input, output any) string {
			return describeOp(input.(kvInput), output.(kvOutput))
		},
		DescribeState: func(state any) string {
			s := state.(kvState)
			if s.ModRev == 0 {
				return "<absent>"
			}
			return fmt.Sprintf("%q@%d", s.Value, s.ModRev)
		},
	}
}

// step applies one operation to a key and says whether the store could
// have answered what it did. A write must create a revision above the key's
// current one; a read must see exactly the current value and revision.
func step(s kvState, in kvInput, out kvOutput) (bool, kvState) {
	switch in.Kind {
	case opGet:
		return out.Value == s.Value && out.ModRev == s.ModRev && out.Rev >= s.ModRev, s
	case opPut:
		if out.Rev <= s.ModRev {
			return false, s
		}
		return true, kvState{Value: in.Value, ModRev: out.Rev}
	case opCAS:
		if out.Succeeded {
			if s.ModRev != in.ExpectRev || out.Rev <= s.ModRev {
				return false, s
			}
			return true, kvState{Value: in.Value, ModRev: out.Rev}
		}
		ok := s.ModRev != in.ExpectRev && out.Value == s.Value && out.ModRev == s.ModRev && out.Rev >= s.ModRev
		return ok, s
	}
	panic(fmt.Sprintf("linearizability: unknown op kind %d", in.Kind))
}

// partitionByKey splits a history into one history per key, in a stable
// order so that reports are reproducible.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(kvInput).Key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// describeOp renders an operation for porcupine's visualization.
func describeOp(in kvInput, out kvOutput) string {
	var b strings.Builder
	switch in.Kind {
	case opGet:
		fmt.Fprintf(&b, "get(%s) -> %q@%d", in.Key, out.Value, out.ModRev)
	case opPut:
		fmt.Fprintf(&b, "put(%s, %q) -> rev %d", in.Key, in.Value, out.Rev)
	case opCAS:
		fmt.Fprintf(&b, "cas(%s, mod=%d, %q) -> ", in.Key, in.ExpectRev, in.Value)
		if out.Succeeded {
			fmt.Fprintf(&b, "ok rev %d", out.Rev)
		} else {
			fmt.Fprintf(&b, "failed, saw %q@%d", out.Value, out.ModRev)
		}
	}
	return b.String()
}

// isWrite reports whether an operation changed the store when it succeeded.
func isWrite(in kvInput, out kvOutput) bool {
	return in.Kind == opPut || (in.Kind == opCAS && out.Succeeded)
}
