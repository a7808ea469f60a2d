package apiserver

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// allocated reports whether the allocation key prefix+member exists.
func allocated(t *testing.T, c *testCluster, prefix, member string) bool {
	t.Helper()
	resp, err := c.apis[0].cfg.Storage.KV.Get(ctxT(t), prefix+member, clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count == 1
}

func portHeld(t *testing.T, c *testCluster, port int32) bool {
	return allocated(t, c, nodePortPrefix, strconv.Itoa(int(port)))
}

// updateService reads a service, changes it with mutate and writes it
// back, as kubectl edit does; a store leader change is retried.
func updateService(t *testing.T, svcs typedcorev1.ServiceInterface, name string, mutate func(*corev1.Service)) (*corev1.Service, error) {
	t.Helper()
	var out *corev1.Service
	var updateErr error
	retryTransient(t, func() error {
		svc, err := svcs.Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(svc)
		out, updateErr = svcs.Update(ctxT(t), svc, metav1.UpdateOptions{})
		if apierrors.IsInternalError(updateErr) || apierrors.IsServiceUnavailable(updateErr) || apierrors.IsTimeout(updateErr) {
			return updateErr
		}
		return nil
	})
	return out, updateErr
}

// TestServiceUpdatesAllocateAndRelease checks that changing a service's
// type or ports takes and gives back cluster IPs and node ports as
// kube-apiserver does.
func TestServiceUpdatesAllocateAndRelease(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cs := c.unthrottledClient(t, 0)
	createNamespace(t, c, "team")
	svcs := cs.CoreV1().Services("team")
	waitKubernetesService(t, cs)
	inRange := func(p int32) bool { return p >= 30000 && p <= 32767 }
	create := func(t *testing.T, svc *corev1.Service) *corev1.Service {
		t.Helper()
		out, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	var nodePort int32
	t.Run("ClusterIPToNodePortAllocatesNodePorts", func(t *testing.T) {
		before := create(t, testService("web").obj())
		out, err := updateService(t, svcs, "web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
		if err != nil {
			t.Fatal(err)
		}
		nodePort = out.Spec.Ports[0].NodePort
		if !inRange(nodePort) || !portHeld(t, c, nodePort) || out.Spec.ClusterIP != before.Spec.ClusterIP {
			t.Fatalf("after the type change: node port %d (held %v), cluster IP %s -> %s",
				nodePort, portHeld(t, c, nodePort), before.Spec.ClusterIP, out.Spec.ClusterIP)
		}
	})

	t.Run("UpdateWithoutNodePortsKeepsThem", func(t *testing.T) {
		out, err := updateService(t, svcs, "web", func(s *corev1.Service) {
			s.Spec.Ports[0].NodePort = 0 // as in the original manifest
			s.Labels = map[string]string{"edited": "yes"}
		})
		if err != nil || out.Spec.Ports[0].NodePort != nodePort {
			t.Fatalf("node port %d, want %d kept (%v)", out.Spec.Ports[0].NodePort, nodePort, err)
		}
	})

	var added int32
	t.Run("AddedPortGetsANodePortRemovedOneGivesItBack", func(t *testing.T) {
		out, err := updateService(t, svcs, "web", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443})
		})
		if err != nil {
			t.Fatal(err)
		}
		added = out.Spec.Ports[1].NodePort
		if out.Spec.Ports[0].NodePort != nodePort || !inRange(added) || added == nodePort || !portHeld(t, c, added) {
			t.Fatalf("ports %+v", out.Spec.Ports)
		}
		if _, err := updateService(t, svcs, "web", func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] }); err != nil {
			t.Fatal(err)
		}
		if portHeld(t, c, added) || !portHeld(t, c, nodePort) {
			t.Fatalf("after removing the port: %d held %v, %d held %v", added, portHeld(t, c, added), nodePort, portHeld(t, c, nodePort))
		}
	})

	t.Run("ChangedNodePortIsClaimedAndTheOldReleased", func(t *testing.T) {
		out, err := updateService(t, svcs, "web", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30111 })
		if err != nil || out.Spec.Ports[0].NodePort != 30111 {
			t.Fatalf("node port %v: %v", out, err)
		}
		if !portHeld(t, c, 30111) || portHeld(t, c, nodePort) {
			t.Fatalf("30111 held %v, %d held %v", portHeld(t, c, 30111), nodePort, portHeld(t, c, nodePort))
		}
		nodePort = 30111
	})

	refused := []struct {
		name   string
		mutate func(*corev1.Service)
		msg    string
	}{
		{"NodePortOfAnotherServiceIs422", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30222 }, "provided port is already allocated"},
		{"DuplicateNodePortIs422", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, NodePort: s.Spec.Ports[0].NodePort})
		}, "Duplicate value"},
		{"NodePortOutOfRangeIs422", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 8080 }, "provided port is not in the valid range"},
		{"ChangedClusterIPIs422", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.200", []string{"10.96.0.200"}
		}, "may not change once set"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "NodePortOfAnotherServiceIs422" {
				create(t, testService("other").Type(corev1.ServiceTypeNodePort).NodePort(30222).obj())
			}
			before := allocationKeys(t, c, nodePortPrefix) + allocationKeys(t, c, serviceIPPrefix)
			_, err := updateService(t, svcs, "web", tt.mutate)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("update: %v, want 422 %q", err, tt.msg)
			}
			after := allocationKeys(t, c, nodePortPrefix) + allocationKeys(t, c, serviceIPPrefix)
			if after != before || !portHeld(t, c, nodePort) {
				t.Fatalf("a refused update changed the allocations: %d -> %d, %d held %v", before, after, nodePort, portHeld(t, c, nodePort))
			}
		})
	}

	t.Run("DryRunAllocatesNothing", func(t *testing.T) {
		create(t, testService("dry").obj())
		before := allocationKeys(t, c, nodePortPrefix)
		svc, err := svcs.Get(ctx, "dry", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Type = corev1.ServiceTypeNodePort
		out, err := svcs.Update(ctx, svc, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || !inRange(out.Spec.Ports[0].NodePort) {
			t.Fatalf("dry run: %v %v", out, err)
		}
		if after := allocationKeys(t, c, nodePortPrefix); after != before {
			t.Fatalf("a dry run allocated %d node ports", after-before)
		}
	})

	t.Run("NodePortToClusterIPReleasesThem", func(t *testing.T) {
		out, err := updateService(t, svcs, "web", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
		if err != nil || out.Spec.Ports[0].NodePort != 0 || out.Spec.ExternalTrafficPolicy != "" {
			t.Fatalf("after the type change: %+v %v", out, err)
		}
		if portHeld(t, c, nodePort) {
			t.Fatalf("node port %d still held", nodePort)
		}
	})

	t.Run("LocalLoadBalancerToClusterIPReleasesTheHealthCheckPort", func(t *testing.T) {
		lb := testService("lb").Type(corev1.ServiceTypeLoadBalancer).obj()
		lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		out := create(t, lb)
		hc, np := out.Spec.HealthCheckNodePort, out.Spec.Ports[0].NodePort
		if !portHeld(t, c, hc) || !portHeld(t, c, np) {
			t.Fatalf("load balancer ports %d %d not held", hc, np)
		}
		out, err := updateService(t, svcs, "lb", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
		if err != nil || out.Spec.HealthCheckNodePort != 0 {
			t.Fatalf("after the type change: %+v %v", out, err)
		}
		if portHeld(t, c, hc) || portHeld(t, c, np) {
			t.Fatalf("health check port %d held %v, node port %d held %v", hc, portHeld(t, c, hc), np, portHeld(t, c, np))
		}
	})

	var ip string
	t.Run("ClusterIPToExternalNameReleasesTheIP", func(t *testing.T) {
		before, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip = before.Spec.ClusterIP
		out, err := updateService(t, svcs, "web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "example.com"
		})
		if err != nil || out.Spec.ClusterIP != "" || len(out.Spec.ClusterIPs) != 0 {
			t.Fatalf("after the type change: %+v %v", out, err)
		}
		if allocated(t, c, serviceIPPrefix, ip) {
			t.Fatalf("cluster IP %s still held", ip)
		}
	})

	t.Run("ExternalNameToClusterIPAllocatesOne", func(t *testing.T) {
		create(t, testService("taker").IP(ip).obj()) // the released IP is free again
		_, err := updateService(t, svcs, "web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.ClusterIP = ip
		})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
			t.Fatalf("requesting a taken IP: %v, want 422", err)
		}
		out, err := updateService(t, svcs, "web", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		})
		if err != nil || !inServiceCIDR(t, out.Spec.ClusterIP) || out.Spec.ClusterIP == ip || !allocated(t, c, serviceIPPrefix, out.Spec.ClusterIP) {
			t.Fatalf("after the type change: %+v %v", out, err)
		}
	})

	t.Run("NothingLeaks", func(t *testing.T) {
		deleteServices(t, svcs)
		if n := allocationKeys(t, c, nodePortPrefix); n != 0 {
			t.Fatalf("%d node ports still allocated", n)
		}
		if n := allocationKeys(t, c, serviceIPPrefix); n != 1 {
			t.Fatalf("%d cluster IPs still allocated, want the kubernetes service's only", n)
		}
	})
}
