package storage

import (
	"cairn/internal/testport"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn/raftstore"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// testCluster is a real cluster of store replicas on loopback (insecure:
// TLS is the store's own concern and tested there).
type testCluster struct {
	t       testing.TB
	cfgs    []raftstore.Config
	servers []*raftstore.Server
}

func freeAddr(t testing.TB) string {
	t.Helper()
	addrs, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0]
}

func testLogger() *slog.Logger {
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newTestCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	dir := t.TempDir()
	var peers []raftstore.Peer
	for i := 0; i < n; i++ {
		peers = append(peers, raftstore.Peer{Name: fmt.Sprintf("s%d", i+1), Address: freeAddr(t)})
	}
	for i := 0; i < n; i++ {
		c.cfgs = append(c.cfgs, raftstore.Config{
			Name:               peers[i].Name,
			DataDir:            filepath.Join(dir, peers[i].Name),
			PeerListen:         peers[i].Address,
			StoreListen:        freeAddr(t),
			InitialCluster:     peers,
			Logger:             testLogger().With("test_member", peers[i].Name),
			HeartbeatTimeout:   300 * time.Millisecond,
			ElectionTimeout:    300 * time.Millisecond,
			LeaderLeaseTimeout: 150 * time.Millisecond,
			RequestTimeout:     5 * time.Second,
		})
	}
	c.servers = make([]*raftstore.Server, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range c.cfgs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c.servers[i], errs[i] = raftstore.New(c.cfgs[i])
		}(i)
	}
	wg.Wait()
	t.Cleanup(c.close)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.waitLeader()
	return c
}

func (c *testCluster) close() {
	for _, s := range c.servers {
		if s != nil {
			s.Close()
		}
	}
}

// waitLeader waits until a live replica is the ready leader.
func (c *testCluster) waitLeader() int {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range c.servers {
			if s != nil && s.IsLeader() {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader within 15s")
	return -1
}

// stop shuts replica i down, as a crash would.
func (c *testCluster) stop(i int) {
	c.servers[i].Close()
	c.servers[i] = nil
}

// local returns a backend on replica i's in-process clients, as a
// co-located API server uses.
func (c *testCluster) local(i int) Backend {
	l := c.servers[i].Local()
	b, closeFn := NewLocalBackend(l.KV, l.Watch, l.Lease)
	c.t.Cleanup(closeFn)
	return b
}

// client returns an etcd client of the given replicas (all if none), as a
// standalone API server uses.
func (c *testCluster) client(members ...int) *clientv3.Client {
	c.t.Helper()
	if len(members) == 0 {
		for i := range c.cfgs {
			members = append(members, i)
		}
	}
	var eps []string
	for _, i := range members {
		eps = append(eps, "http://"+c.cfgs[i].StoreListen)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

func clientBackend(cli *clientv3.Client) Backend {
	return Backend{KV: cli.KV, Watcher: cli.Watcher, Lease: cli.Lease}
}

// countingWatcher counts the store watches opened through it and can hold
// new ones back and break the current ones, to test the cache's resume.
type countingWatcher struct {
	clientv3.Watcher
	watches atomic.Int64
	held    atomic.Int64 // watches waiting at the gate

	mu     sync.Mutex
	gate   chan struct{} // when set, new watches wait for it to close
	cancel []context.CancelFunc
}

func (w *countingWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	w.mu.Lock()
	gate := w.gate
	ctx, cancel := context.WithCancel(ctx)
	w.cancel = append(w.cancel, cancel)
	w.mu.Unlock()
	if gate != nil {
		w.held.Add(1)
		defer w.held.Add(-1)
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	w.watches.Add(1)
	return w.Watcher.Watch(ctx, key, opts...)
}

// breakWatches ends the current store watches; with hold, new ones wait
// until the returned function is called.
func (w *countingWatcher) breakWatches(hold bool) (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	gate := make(chan struct{})
	if hold {
		w.gate = gate
	}
	for _, c := range w.cancel {
		c()
	}
	w.cancel = nil
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.gate = nil
		close(gate)
	}
}

// countingKV counts range reads, to tell reads served by the store from
// reads served by the watch cache.
type countingKV struct {
	clientv3.KV
	gets atomic.Int64
}

func (k *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.gets.Add(1)
	return k.KV.Get(ctx, key, opts...)
}

// newConfigMapStore returns a running, synced store of configmaps.
func newConfigMapStore(t *testing.T, b Backend, opts StoreOptions) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	s := NewStore(b, "/registry/configmaps",
		func() runtime.Object { return &corev1.ConfigMap{} },
		func() runtime.Object { return &corev1.ConfigMapList{} }, opts)
	s.Run(context.Background())
	t.Cleanup(s.Stop)
	waitFor(t, s.Ready)
	return s
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition not met within 10s")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cm builds a test configmap.
func cm(ns, name string, labels map[string]string, data ...string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + name)}}
	if len(data) > 0 {
		c.Data = map[string]string{}
		for i := 0; i+1 < len(data); i += 2 {
			c.Data[data[i]] = data[i+1]
		}
	}
	return c
}

func rvOf(t *testing.T, obj runtime.Object) string {
	t.Helper()
	switch o := obj.(type) {
	case metav1.Object:
		return o.GetResourceVersion()
	case metav1.ListInterface:
		return o.GetResourceVersion()
	}
	t.Fatalf("%T has no resourceVersion", obj)
	return ""
}

// names returns the names of a configmap list's items, in order.
func names(list runtime.Object) string {
	var out []string
	for _, c := range list.(*corev1.ConfigMapList).Items {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}
