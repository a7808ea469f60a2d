package linearizability

import (
	"strings"
	"testing"
)

// ev builds a put event for the tables below.
func ev(key, value string, create, mod, version int64) event {
	return event{Put: true, Key: key, Value: value, CreateRev: create, ModRev: mod, Version: version}
}

func TestDiffEvents(t *testing.T) {
	want := []event{ev("a", "1", 2, 2, 1), ev("b", "2", 3, 3, 1), ev("a", "3", 2, 4, 2)}
	tests := []struct {
		name string
		got  []event
		diff string // substring of the description; "" for equal
	}{
		{"equal", want, ""},
		{"gap", []event{want[0], want[2]}, "event 1 differs"},
		{"duplicate after resume", []event{want[0], want[1], want[1], want[2]}, "event 2 differs"},
		{"reordered", []event{want[1], want[0], want[2]}, "event 0 differs"},
		{"wrong value", []event{want[0], ev("b", "x", 3, 3, 1), want[2]}, `"x"`},
		{"missing tail", want[:2], "1 events missing"},
		{"extra tail", append(append([]event(nil), want...), ev("c", "4", 5, 5, 1)), "1 extra events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diffEvents(tt.got, want)
			if (tt.diff == "") != (d == "") || !strings.Contains(d, tt.diff) {
				t.Errorf("diffEvents = %q, want it to mention %q", d, tt.diff)
			}
		})
	}
}

func TestCheckHistory(t *testing.T) {
	tests := []struct {
		name   string
		events []event
		bad    string // substring of the complaint; "" for a valid history
	}{
		{"valid", []event{ev("a", "1", 2, 2, 1), ev("b", "2", 3, 3, 1), ev("a", "3", 2, 4, 2)}, ""},
		{"recreated after delete", []event{ev("a", "1", 2, 2, 1), {Key: "a", ModRev: 3}, ev("a", "2", 4, 4, 1)}, ""},
		{"revision repeats", []event{ev("a", "1", 2, 2, 1), ev("b", "2", 2, 2, 1)}, "not above"},
		{"version skips", []event{ev("a", "1", 2, 2, 1), ev("a", "2", 2, 3, 3)}, "want create=2 ver=2"},
		{"wrong create revision", []event{ev("a", "1", 2, 2, 1), ev("a", "2", 3, 3, 2)}, "want create=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkHistory(tt.events)
			if (tt.bad == "") != (got == "") || !strings.Contains(got, tt.bad) {
				t.Errorf("checkHistory = %q, want it to mention %q", got, tt.bad)
			}
		})
	}
}

func TestFold(t *testing.T) {
	state := fold([]event{ev("a", "1", 2, 2, 1), ev("b", "2", 3, 3, 1), {Key: "b", ModRev: 4}, ev("a", "3", 2, 5, 2)})
	if len(state) != 1 || state["a"] != ev("a", "3", 2, 5, 2) {
		t.Errorf("fold = %v, want only a=3", state)
	}
}
