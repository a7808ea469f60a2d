package agent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestNodeClientSurvivesTheLossOfTheAPIServerItUses(t *testing.T) {
	c := testcluster.New(t, 3)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if _, err := c.Client(0).CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{NodeName: "n1", DataDir: t.TempDir(), PKIDir: filepath.Join(c.Dir(), "pki"),
		Servers: []string{c.URL(0), c.URL(1), c.URL(2)}}
	conn, err := connect(cfg, testcluster.Logger())
	if err != nil {
		t.Fatal(err)
	}
	if conn.rest.QPS != clientQPS || conn.rest.Burst != clientBurst {
		t.Errorf("QPS/Burst = %v/%v, want %v/%v", conn.rest.QPS, conn.rest.Burst, clientQPS, clientBurst)
	}
	if len(conn.caData) == 0 {
		t.Error("the cluster CA is not kept for the kubelet API")
	}
	client, err := kubernetes.NewForConfig(conn.rest)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go conn.balancer.Run(runCtx)
	if _, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Fatalf("the node reads its Node: %v", err)
	}
	var current string
	for _, e := range conn.balancer.Endpoints() {
		if e.Current {
			current = e.Host
		}
	}
	killed := -1
	for i := range c.Size() {
		if c.APIHost(i) == current {
			killed = i
		}
	}
	c.Kill(killed)
	start := time.Now()
	for range 5 {
		getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := client.CoreV1().Nodes().Get(getCtx, "n1", metav1.GetOptions{})
		cancel()
		if err != nil {
			t.Fatalf("with API server %d killed: %v", killed, err)
		}
	}
	t.Logf("reads went on %v after the API server in use was killed", time.Since(start).Round(10*time.Millisecond))
}

func TestDefaultAdvertise(t *testing.T) {
	ip := net.ParseIP("10.0.0.11")
	tests := []struct {
		name, listen string
		nodeIP       net.IP
		want         string
	}{
		{"every address: the node IP", "0.0.0.0:7946", ip, "10.0.0.11:7946"},
		{"no host: the node IP", ":7000", ip, "10.0.0.11:7000"},
		{"a named address is advertised as is", "10.0.0.12:7946", ip, ""},
		{"port 0 is known once bound", "0.0.0.0:0", ip, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultAdvertise(tt.listen, tt.nodeIP); got != tt.want {
				t.Errorf("defaultAdvertise(%q) = %q, want %q", tt.listen, got, tt.want)
			}
		})
	}
}

func TestReadGossipKey(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		size int
		ok   bool
	}{
		{"16 bytes", 16, true},
		{"32 bytes", 32, true},
		{"a trailing newline is not a key", 33, false},
		{"empty", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, make([]byte, tt.size), 0o600); err != nil {
				t.Fatal(err)
			}
			key, err := readGossipKey(path)
			if (err == nil) != tt.ok || (tt.ok && len(key) != tt.size) {
				t.Errorf("readGossipKey: %d bytes, err %v", len(key), err)
			}
		})
	}
	if _, err := readGossipKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing key file is accepted")
	}
}
