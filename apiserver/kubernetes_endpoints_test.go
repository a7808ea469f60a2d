package apiserver

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kubernetesEndpoints lists the kubernetes Endpoints as ip:port, in the
// order they are stored.
func kubernetesEndpoints(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	ep, err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctxT(t), kubernetesServiceName, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, ss := range ep.Subsets {
		for _, a := range ss.Addresses {
			out = append(out, net.JoinHostPort(a.IP, strconv.Itoa(int(ss.Ports[0].Port))))
		}
	}
	return out
}

// waitKubernetesEndpoints waits until the kubernetes Endpoints are want
// (sorted by port) and returns how long that took.
func waitKubernetesEndpoints(t *testing.T, cs kubernetes.Interface, want []string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := kubernetesEndpoints(t, cs)
		if slices.Equal(got, want) {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("kubernetes endpoints %v after %s, want %v", got, within, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKubernetesEndpointsFollowLiveAPIServers runs three API servers that
// advertise themselves, kills one with its store replica (its lease can
// be neither renewed nor revoked, so it has to expire) and stops another
// one cleanly: the kubernetes endpoints drop the first once its lease
// expires, the second at once.
func TestKubernetesEndpointsFollowLiveAPIServers(t *testing.T) {
	const ttl = 3 * time.Second
	c := newTestCluster(t, 3)
	var idx []int
	var addrs []string
	for i := range c.stores {
		idx = append(idx, c.startAPIWith(i, func(cfg *Config, addr string) {
			cfg.AdvertiseAddress = addr
			cfg.EndpointLeaseTTL = ttl
			addrs = append(addrs, addr)
		}))
	}
	// The servers listen on 127.0.0.1: the endpoints sort by port.
	sorted := func(a ...string) []string {
		out := slices.Clone(a)
		slices.SortFunc(out, func(x, y string) int {
			_, px, _ := net.SplitHostPort(x)
			_, py, _ := net.SplitHostPort(y)
			nx, _ := strconv.Atoi(px)
			ny, _ := strconv.Atoi(py)
			return nx - ny
		})
		return out
	}
	cs := c.client(idx[0])

	t.Run("EveryServerIsListed", func(t *testing.T) {
		waitKubernetesEndpoints(t, cs, sorted(addrs...), 15*time.Second)
	})

	t.Run("RenewalsWriteNothing", func(t *testing.T) {
		before, err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctxT(t), kubernetesServiceName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl) // three renewals and reconciliations by each server
		after, err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctxT(t), kubernetesServiceName, metav1.GetOptions{})
		if err != nil || after.ResourceVersion != before.ResourceVersion {
			t.Fatalf("endpoints rewritten while nothing changed: %s -> %s (%v)", before.ResourceVersion, after.ResourceVersion, err)
		}
	})

	t.Run("KilledServerIsDroppedOnceItsLeaseExpires", func(t *testing.T) {
		c.stores[1].Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.stopAPI(ctx, idx[1])
		// The lease ends at most a TTL after its last renewal (a new
		// store leader gives it a full TTL again), and a survivor sees
		// that within a renewal interval.
		took := waitKubernetesEndpoints(t, cs, sorted(addrs[0], addrs[2]), 3*ttl)
		t.Logf("killed server dropped after %s (lease TTL %s)", took.Round(100*time.Millisecond), ttl)
	})

	t.Run("StoppedServerLeavesAtOnce", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.stopAPI(ctx, idx[2])
		waitKubernetesEndpoints(t, cs, []string{addrs[0]}, ttl/2)
	})
}
