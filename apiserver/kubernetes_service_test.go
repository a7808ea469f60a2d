package apiserver

import (
	"slices"
	"sync"
	"testing"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// extraAPIServer builds, without serving it, another API server over
// store replica i that advertises addr, to drive its reconciliation of
// the kubernetes service by hand.
func extraAPIServer(t *testing.T, c *testCluster, i int, addr string) *Server {
	t.Helper()
	backend, closeBackend := LocalBackend(c.stores[i])
	t.Cleanup(closeBackend)
	s, err := New(Config{Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(), Logger: quietLogger(),
		Storage: backend, AdvertiseAddress: addr})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKubernetesServiceEndpoints checks that the kubernetes service's
// Endpoints and EndpointSlices list exactly the API servers whose lease
// is alive, also when several reconcile at once and when they listen on
// different ports.
func TestKubernetesServiceEndpoints(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.client(0)
	waitKubernetesService(t, cs)
	addrs := []string{"127.0.0.1:6443", "127.0.0.2:6443", "127.0.0.1:16443"}
	var servers []*Server
	var leases []*endpointLease
	for i, addr := range addrs {
		s := extraAPIServer(t, c, i, addr)
		ep, ok := s.advertisedEndpoint()
		if !ok {
			t.Fatalf("no endpoint for %s", addr)
		}
		servers = append(servers, s)
		// Long enough to outlive the test: expiry has its own test.
		leases = append(leases, newEndpointLease(s.cfg.Storage, ep, time.Minute))
	}
	reconcileAll := func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, len(servers))
		for i, s := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// As maintainServices does, retry what lost a race
				// with another server.
				var err error
				for try := 0; try < 20; try++ {
					if err = s.reconcileKubernetesService(ctx, leases[i]); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	endpointsByPort := func(t *testing.T) map[int32][]string {
		ep, err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, kubernetesServiceName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Labels[discoveryv1.LabelSkipMirror] != "true" {
			t.Fatalf("endpoints labels %v: the mirroring controller would copy them", ep.Labels)
		}
		got := map[int32][]string{}
		for _, ss := range ep.Subsets {
			for _, a := range ss.Addresses {
				got[ss.Ports[0].Port] = append(got[ss.Ports[0].Port], a.IP)
			}
		}
		return got
	}
	slicesByName := func(t *testing.T) map[string]discoveryv1.EndpointSlice {
		l, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]discoveryv1.EndpointSlice{}
		for _, s := range l.Items {
			byName[s.Name] = s
		}
		return byName
	}

	t.Run("EveryLiveServerIsListed", func(t *testing.T) {
		reconcileAll(t)
		got := endpointsByPort(t)
		if len(got) != 2 || !slices.Equal(got[6443], []string{"127.0.0.1", "127.0.0.2"}) || !slices.Equal(got[16443], []string{"127.0.0.1"}) {
			t.Fatalf("endpoints by port: %v", got)
		}
		byName := slicesByName(t)
		main, other := byName["kubernetes"], byName["kubernetes-16443"]
		if len(byName) != 2 || len(main.Endpoints) != 2 || *main.Ports[0].Port != 6443 || len(other.Endpoints) != 1 || *other.Ports[0].Port != 16443 {
			t.Fatalf("endpoint slices: %+v", byName)
		}
		if main.AddressType != discoveryv1.AddressTypeIPv4 || !*main.Endpoints[0].Conditions.Ready || *main.Ports[0].Name != kubernetesPortName {
			t.Fatalf("slice kubernetes: %+v", main)
		}
	})

	t.Run("ReconcilingAgainWritesNothing", func(t *testing.T) {
		before, err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, kubernetesServiceName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reconcileAll(t)
		after, err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, kubernetesServiceName, metav1.GetOptions{})
		if err != nil || after.ResourceVersion != before.ResourceVersion {
			t.Fatalf("endpoints rewritten: %s -> %s (%v)", before.ResourceVersion, after.ResourceVersion, err)
		}
	})

	t.Run("DeletedLeaseKeyIsWrittenAgain", func(t *testing.T) {
		if _, err := c.apis[0].cfg.Storage.KV.Delete(ctx, leases[1].key()); err != nil {
			t.Fatal(err)
		}
		reconcileAll(t)
		if got := endpointsByPort(t); !slices.Equal(got[6443], []string{"127.0.0.1", "127.0.0.2"}) {
			t.Fatalf("endpoints by port: %v", got)
		}
	})

	t.Run("ServerWithoutLeaseIsDropped", func(t *testing.T) {
		if err := leases[2].revoke(ctx); err != nil {
			t.Fatal(err)
		}
		servers, leases = servers[:2], leases[:2]
		reconcileAll(t)
		if got := endpointsByPort(t); len(got) != 1 || len(got[6443]) != 2 {
			t.Fatalf("endpoints by port: %v", got)
		}
		if byName := slicesByName(t); len(byName) != 1 || len(byName["kubernetes"].Endpoints) != 2 {
			t.Fatalf("endpoint slices: %+v", byName)
		}
	})

	t.Run("DeletedServiceComesBackWithTheFirstIP", func(t *testing.T) {
		if err := cs.CoreV1().Services(metav1.NamespaceDefault).Delete(ctx, kubernetesServiceName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		reconcileAll(t)
		svc, err := cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, kubernetesServiceName, metav1.GetOptions{})
		if err != nil || svc.Spec.ClusterIP != "10.96.0.1" {
			t.Fatalf("kubernetes service after delete: %v %v", svc.Spec.ClusterIP, err)
		}
	})
}

func TestAdvertisedEndpoint(t *testing.T) {
	tests := []struct {
		advertise, listen, want string
	}{
		{"127.0.0.5:6443", "0.0.0.0:6443", "127.0.0.5:6443"},
		{"", "127.0.0.1:16443", "127.0.0.1:16443"},
		{"[fd00::5]:6443", "", "[fd00::5]:6443"},
		{"", "0.0.0.0:6443", ""},
		{"localhost:6443", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.advertise+"|"+tt.listen, func(t *testing.T) {
			s := &Server{cfg: Config{AdvertiseAddress: tt.advertise, Listen: tt.listen}}
			ep, ok := s.advertisedEndpoint()
			got := ""
			if ok {
				got = ep.String()
			}
			if got != tt.want {
				t.Fatalf("endpoint %q, want %q", got, tt.want)
			}
		})
	}
}
