package envvars

import "testing"

func TestExpandFollowsKubernetesRules(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello", "hello"},
		{"one reference", "$(A)", "1"},
		{"references in text", "x$(A)-$(B)y", "x1-twoy"},
		{"unknown kept", "$(A)-$(C)", "1-$(C)"},
		{"empty value", "[$(EMPTY)]", "[]"},
		{"escaped reference", "$$(A)", "$(A)"},
		{"escaped dollar then reference", "$$$(A)", "$1"},
		{"double escape", "$$$$", "$$"},
		{"unclosed", "$(A", "$(A"},
		{"reference scan stops at the first close", "$($(A)", "$($(A)"},
		{"dollar and letter", "$A", "$A"},
		{"trailing dollar", "cost: 5$", "cost: 5$"},
		{"empty name", "$()", "$()"},
		{"nested parens stop at first close", "$(A(B))", "$(A(B))"},
		{"adjacent", "$(A)$(A)", "11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Expand(tt.in, Lookup(vars)); got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLookupSearchesMapsInOrder(t *testing.T) {
	l := Lookup(map[string]string{"A": "first"}, map[string]string{"A": "second", "B": "b"})
	for _, tt := range []struct{ name, want string }{{"A", "first"}, {"B", "b"}} {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := l(tt.name); !ok || got != tt.want {
				t.Errorf("lookup(%s) = %q, %v; want %q", tt.name, got, ok, tt.want)
			}
		})
	}
	if _, ok := l("C"); ok {
		t.Error("lookup(C) found a value")
	}
}

func TestExpandAllKeepsNil(t *testing.T) {
	if ExpandAll(nil, Lookup()) != nil {
		t.Error("ExpandAll(nil) is not nil")
	}
	got := ExpandAll([]string{"sh", "-c", "echo $(A)"}, Lookup(map[string]string{"A": "x"}))
	if got[2] != "echo x" {
		t.Errorf("got %q", got)
	}
}
