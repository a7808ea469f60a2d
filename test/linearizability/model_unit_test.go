package linearizability

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// op builds a porcupine operation for the tables below.
func op(client int, call, ret int64, in kvInput, out kvOutput) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func put(key, value string) kvInput { return kvInput{Kind: opPut, Key: key, Value: value} }
func get(key string) kvInput        { return kvInput{Kind: opGet, Key: key} }
func cas(key string, expect int64, value string) kvInput {
	return kvInput{Kind: opCAS, Key: key, Value: value, ExpectRev: expect}
}
func wrote(rev int64) kvOutput { return kvOutput{Rev: rev, Succeeded: true} }
func read(rev int64, value string, mod int64) kvOutput {
	return kvOutput{Rev: rev, Value: value, ModRev: mod}
}

func TestModelStep(t *testing.T) {
	at := func(v string, rev int64) kvState { return kvState{Value: v, ModRev: rev} }
	tests := []struct {
		name  string
		state kvState
		in    kvInput
		out   kvOutput
		ok    bool
		next  kvState
	}{
		{"get absent", kvState{}, get("a"), read(5, "", 0), true, kvState{}},
		{"get current", at("x", 3), get("a"), read(5, "x", 3), true, at("x", 3)},
		{"get stale value", at("x", 3), get("a"), read(5, "w", 2), false, at("x", 3)},
		{"get header behind key", at("x", 3), get("a"), read(2, "x", 3), false, at("x", 3)},
		{"put", at("x", 3), put("a", "y"), wrote(4), true, at("y", 4)},
		{"put at old revision", at("x", 3), put("a", "y"), wrote(3), false, at("x", 3)},
		{"cas holds", at("x", 3), cas("a", 3, "y"), wrote(7), true, at("y", 7)},
		{"cas create on absent", kvState{}, cas("a", 0, "y"), wrote(7), true, at("y", 7)},
		{"cas succeeds but should not", at("x", 3), cas("a", 2, "y"), wrote(7), false, at("x", 3)},
		{"cas fails and reads current", at("x", 3), cas("a", 2, "y"), read(7, "x", 3), true, at("x", 3)},
		{"cas fails but should hold", at("x", 3), cas("a", 3, "y"), read(7, "x", 3), false, at("x", 3)},
		{"cas fails and reads stale", at("x", 3), cas("a", 2, "y"), read(7, "w", 2), false, at("x", 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, next := step(tt.state, tt.in, tt.out)
			if ok != tt.ok || next != tt.next {
				t.Errorf("step = %v, %+v; want %v, %+v", ok, next, tt.ok, tt.next)
			}
		})
	}
}

func TestPorcupineVerdicts(t *testing.T) {
	tests := []struct {
		name    string
		done    []porcupine.Operation
		unknown []porcupine.Operation
		// committed maps values to revisions, as the watch history would.
		committed map[string]int64
		want      porcupine.CheckResult
	}{
		{
			name: "sequential put then get",
			done: []porcupine.Operation{
				op(0, 0, 10, put("a", "v1"), wrote(2)),
				op(1, 20, 30, get("a"), read(2, "v1", 2)),
			},
			want: porcupine.Ok,
		},
		{
			name: "stale read after acknowledged write",
			done: []porcupine.Operation{
				op(0, 0, 10, put("a", "v1"), wrote(2)),
				op(0, 20, 30, put("a", "v2"), wrote(3)),
				op(1, 40, 50, get("a"), read(3, "v1", 2)),
			},
			want: porcupine.Illegal,
		},
		{
			name: "concurrent read may see either",
			done: []porcupine.Operation{
				op(0, 0, 10, put("a", "v1"), wrote(2)),
				op(0, 20, 50, put("a", "v2"), wrote(3)),
				op(1, 30, 40, get("a"), read(2, "v1", 2)),
			},
			want: porcupine.Ok,
		},
		{
			name: "lost write seen later is resolved as applied",
			done: []porcupine.Operation{
				op(1, 100, 110, get("a"), read(4, "v1", 4)),
			},
			unknown:   []porcupine.Operation{{ClientId: 0, Input: put("a", "v1"), Call: 0}},
			committed: map[string]int64{"v1": 4},
			want:      porcupine.Ok,
		},
		{
			name: "write never committed cannot be read",
			done: []porcupine.Operation{
				op(1, 100, 110, get("a"), read(4, "v1", 4)),
			},
			unknown: []porcupine.Operation{{ClientId: 0, Input: put("a", "v1"), Call: 0}},
			want:    porcupine.Illegal,
		},
		{
			name: "stale read on a second key",
			done: []porcupine.Operation{
				op(0, 0, 10, put("a", "v1"), wrote(2)),
				op(1, 0, 10, put("b", "w1"), wrote(3)),
				op(2, 20, 30, get("a"), read(3, "v1", 2)),
				op(2, 40, 50, get("b"), read(3, "", 0)),
			},
			want: porcupine.Illegal,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := resolveUnknown(tt.done, tt.unknown, tt.committed)
			if got := porcupine.CheckOperationsTimeout(kvModel(), res.history, 0); got != tt.want {
				t.Errorf("verdict = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestResolveUnknown(t *testing.T) {
	done := []porcupine.Operation{op(0, 0, 50, put("a", "v0"), wrote(2))}
	unknown := []porcupine.Operation{
		{ClientId: 1, Input: put("a", "v1"), Call: 10},
		{ClientId: 2, Input: cas("a", 2, "v2"), Call: 60},
	}
	res := resolveUnknown(done, unknown, map[string]int64{"v2": 5})
	if res.applied != 1 || res.notApplied != 1 || len(res.history) != 2 {
		t.Fatalf("resolved %+v, want one applied, one dropped", res)
	}
	got := res.history[1]
	if got.Output != wrote(5) || got.Return <= 60 {
		t.Errorf("applied unknown CAS resolved to %+v, want output rev 5 returning after every other event", got)
	}
}

func TestCheckRevisionOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want string // substring of the first violation; "" for none
	}{
		{
			name: "increasing",
			ops: []porcupine.Operation{
				op(0, 0, 10, put("a", "v1"), wrote(2)),
				op(1, 20, 30, get("b"), read(2, "", 0)),
				op(1, 40, 50, put("b", "w1"), wrote(3)),
			},
		},
		{
			name: "concurrent ops may see any order",
			ops: []porcupine.Operation{
				op(0, 0, 30, put("a", "v1"), wrote(3)),
				op(1, 10, 20, get("b"), read(2, "", 0)),
			},
		},
		{
			name: "read behind an earlier write on another key",
			ops: []porcupine.Operation{
				op(0, 0, 10, put("a", "v1"), wrote(5)),
				op(1, 20, 30, get("b"), read(4, "", 0)),
			},
			want: "saw revision 4",
		},
		{
			name: "write reusing a revision",
			ops: []porcupine.Operation{
				op(0, 0, 10, get("a"), read(5, "", 0)),
				op(1, 20, 30, put("b", "w1"), wrote(5)),
			},
			want: "saw revision 5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := checkRevisionOrder(tt.ops, 3)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("unexpected violations: %v", errs)
			case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs[0], tt.want)):
				t.Errorf("violations = %v, want one mentioning %q", errs, tt.want)
			}
		})
	}
}
