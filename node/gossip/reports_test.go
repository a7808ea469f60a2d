package gossip

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// testNode builds a Node reported dead by reporters.
func testNode(name string, reporters ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"unrelated": "x", AddressAnnotation: "10.0.0.1:7946"}}}
	for _, r := range reporters {
		n.Annotations[ReportKey(r)] = "2025-01-02T15:04:05Z"
	}
	return n
}

func TestAgreed(t *testing.T) {
	tests := []struct {
		name      string
		node      *corev1.Node
		livePeers int
		want      bool
	}{
		{"NoReports", testNode("c"), 4, false},
		{"OneConfusedPeerOfFour", testNode("c", "a"), 4, false},
		{"OneConfusedPeerOfTwo", testNode("c", "a"), 2, false},
		{"TwoPeersAgree", testNode("c", "a", "b"), 4, true},
		{"ThreePeersAgree", testNode("c", "a", "b", "d"), 4, true},
		{"OnlyPeerReports", testNode("c", "a"), 1, true},
		{"NoLivePeers", testNode("c", "a", "b"), 0, false},
		{"SelfReportDoesNotCount", testNode("c", "a", "c"), 4, false},
		{"EmptyReportDoesNotCount", func() *corev1.Node {
			n := testNode("c", "a")
			n.Annotations[ReportKey("b")] = ""
			return n
		}(), 4, false},
		{"NilNode", nil, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Agreed(tt.node, tt.livePeers); got != tt.want {
				t.Fatalf("Agreed = %v, want %v (reporters %v, %d live peers)", got, tt.want, Reporters(tt.node), tt.livePeers)
			}
		})
	}
}

func TestReportKeyIsAValidAnnotationKey(t *testing.T) {
	long := strings.Repeat("node-with-a-very-long-name.", 8) + "example"
	tests := []struct{ reporter, want string }{
		{"worker-1", "gossip.cairn.io/dead-by.worker-1"},
		{"ip-10-0-0-1.eu-west-1.compute.internal", "gossip.cairn.io/dead-by.ip-10-0-0-1.eu-west-1.compute.internal"},
		{long, ""},
		{long + "x", ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.reporter[:min(20, len(tt.reporter))], func(t *testing.T) {
			key := ReportKey(tt.reporter)
			if tt.want != "" && key != tt.want {
				t.Fatalf("ReportKey(%q) = %q, want %q", tt.reporter, key, tt.want)
			}
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				t.Fatalf("ReportKey(%q) = %q is not a valid annotation key: %v", tt.reporter, key, errs)
			}
			if !strings.HasPrefix(key, ReportPrefix) {
				t.Fatalf("ReportKey(%q) = %q lacks %q", tt.reporter, key, ReportPrefix)
			}
			if other, dup := seen[key]; dup {
				t.Fatalf("%q and %q share the key %q", other, tt.reporter, key)
			}
			seen[key] = tt.reporter
		})
	}
}

func TestReporters(t *testing.T) {
	got := Reporters(testNode("c", "b", "a", "c"))
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("Reporters = %v, want [a b] (sorted, without the node itself)", got)
	}
}

func TestAnnotationPatch(t *testing.T) {
	v := "2025-01-02T15:04:05Z"
	b, err := annotationPatch(map[string]*string{ReportKey("a"): &v, ReportKey("b"): nil})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"annotations":{"gossip.cairn.io/dead-by.a":"2025-01-02T15:04:05Z","gossip.cairn.io/dead-by.b":null}}}`
	if string(b) != want {
		t.Fatalf("patch %s, want %s", b, want)
	}
}
