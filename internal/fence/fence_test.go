package fence

import "testing"

func TestParseRoundTrips(t *testing.T) {
	for _, f := range []Fence{Leader(7), Lease("kube-system", "kube-scheduler", "host-a_1234", 3)} {
		got, err := Parse(f.String())
		if err != nil || got != f {
			t.Fatalf("Parse(%q) = %+v, %v", f.String(), got, err)
		}
	}
	if Leader(7).StoreKey() != "/cairn/fences/leader" {
		t.Fatalf("leader store key %q", Leader(7).StoreKey())
	}
}

func TestParseRefusesMalformedValues(t *testing.T) {
	for _, v := range []string{"", "leader", "leader=", "leader=x", "lease/ns=a#1", "lease//n=a#1", "other=1", "lease/a/b/c=x"} {
		if _, err := Parse(v); err == nil {
			t.Errorf("Parse(%q) accepted", v)
		}
	}
}
