package nodeipam

import (
	"context"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clustertest"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func testNode(name string, cidrs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	if len(cidrs) > 0 {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidrs[0], cidrs
	}
	return n
}

func TestSyncAllocatesAroundExistingNodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cluster  string
		existing []runtime.Object
		want     []string
		wantErr  bool
	}{
		{"first node gets the first subnet", "10.1.0.0/16", nil, []string{"10.1.0.0/24"}, false},
		{"existing allocations are skipped", "10.1.0.0/16",
			[]runtime.Object{testNode("a", "10.1.0.0/24"), testNode("b", "10.1.1.0/24")}, []string{"10.1.2.0/24"}, false},
		{"CIDRs outside the range do not count", "10.1.0.0/16",
			[]runtime.Object{testNode("a", "192.168.0.0/24")}, []string{"10.1.0.0/24"}, false},
		{"dual stack gets one of each", "10.1.0.0/16,fd00::/48", nil, []string{"10.1.0.0/24", "fd00::/64"}, false},
		{"full range", "10.1.0.0/24", []runtime.Object{testNode("a", "10.1.0.0/24")}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := controllers.DefaultOptions()
			opts.ClusterCIDR = tc.cluster
			objs := append([]runtime.Object{testNode("new")}, tc.existing...)
			cc, client := clustertest.FakeContext(t, opts, nil, objs...)
			c, err := New(cc)
			if err != nil {
				t.Fatal(err)
			}
			clustertest.Start(t, cc)
			nodes, _ := c.nodes.List(everythingSelector())
			c.mu.Lock()
			for _, n := range nodes {
				c.unsafeRecord(n)
			}
			c.mu.Unlock()
			err = c.sync(context.Background(), "new")
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync error = %v, want error %v", err, tc.wantErr)
			}
			got, err := client.CoreV1().Nodes().Get(context.Background(), "new", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !equalStrings(got.Spec.PodCIDRs, tc.want) {
				t.Errorf("podCIDRs = %v, want %v", got.Spec.PodCIDRs, tc.want)
			}
			if len(tc.want) > 0 && got.Spec.PodCIDR != tc.want[0] {
				t.Errorf("podCIDR = %q, want %q", got.Spec.PodCIDR, tc.want[0])
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNodesGetDistinctPodCIDRsReleasedOnDelete(t *testing.T) {
	c := testcluster.New(t, 3)
	opts := controllers.DefaultOptions()
	opts.ClusterCIDR = "10.50.0.0/23" // room for two nodes
	clustertest.RunManager(t, c, controllers.Manager{Descriptors: []controllers.Descriptor{Descriptor()}, Options: opts})
	client := c.Client(0)
	ctx := context.Background()
	cidrOf := func(name string) string {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return n.Spec.PodCIDR
	}
	for _, name := range []string{"n1", "n2"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, testNode(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clustertest.Eventually(t, 10*time.Second, "both nodes get a pod CIDR", func() (bool, error) {
		return cidrOf("n1") != "" && cidrOf("n2") != "", nil
	})
	if a, b := cidrOf("n1"), cidrOf("n2"); a == b {
		t.Fatalf("n1 and n2 share pod CIDR %s", a)
	}
	freed := cidrOf("n1")

	if _, err := client.CoreV1().Nodes().Create(ctx, testNode("n3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 10*time.Second, "a CIDRNotAvailable event for the node that does not fit", func() (bool, error) {
		evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "n3" && e.Reason == ReasonCIDRNotAvailable {
				return true, nil
			}
		}
		return false, nil
	})
	if got := cidrOf("n3"); got != "" {
		t.Fatalf("n3 got %s from a full range", got)
	}

	if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 40*time.Second, "n3 gets the CIDR n1 released", func() (bool, error) {
		_, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && cidrOf("n3") == freed, nil
	})
}
