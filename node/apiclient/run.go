package apiclient

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// kubernetesService is the Service whose endpoints are the API servers.
const (
	kubernetesService   = "kubernetes"
	kubernetesNamespace = metav1.NamespaceDefault
	httpsPortName       = "https"
)

// Run probes unhealthy servers and follows the kubernetes Service's
// endpoints until ctx ends.
func (b *Balancer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if !b.cfg.NoEndpointLearning {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.learn(ctx)
		}()
	}
	b.probeLoop(ctx)
	wg.Wait()
}

func (b *Balancer) probeLoop(ctx context.Context) {
	t := time.NewTicker(b.cfg.ProbeInterval)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.probeNow:
		}
		b.mu.Lock()
		var due []*endpoint
		for _, e := range b.endpoints {
			if !e.healthy && !e.probing {
				e.probing = true
				due = append(due, e)
			}
		}
		b.mu.Unlock()
		for _, e := range due {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sent := time.Now()
				err := b.probe(ctx, e)
				b.mu.Lock()
				e.probing = false
				if err != nil && ctx.Err() == nil {
					e.lastErr = err.Error()
				}
				b.mu.Unlock()
				if err == nil {
					b.markUp(e, sent)
				}
			}()
		}
	}
}

// probe asks a server whether it is ready. An answer that needs
// credentials the probe does not carry still shows a serving server.
func (b *Balancer) probe(ctx context.Context, e *endpoint) error {
	ctx, cancel := context.WithTimeout(ctx, max(3*b.cfg.DialTimeout, b.cfg.ProbeInterval))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+e.host+"/readyz", nil)
	if err != nil {
		return err
	}
	if b.restConfig != nil && b.restConfig.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+b.restConfig.BearerToken)
	}
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusUnauthorized, http.StatusForbidden:
		return nil
	}
	return fmt.Errorf("readyz: %s", resp.Status)
}

// learn follows the kubernetes Service's EndpointSlices through the
// Balancer itself.
func (b *Balancer) learn(ctx context.Context) {
	cs, err := kubernetes.NewForConfig(b.restConfig)
	if err != nil {
		b.log.Warn("cannot follow the kubernetes service's endpoints", "err", err)
		return
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(kubernetesNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = discoveryv1.LabelServiceName + "=" + kubernetesService
		}))
	inf := factory.Discovery().V1().EndpointSlices()
	lister := inf.Lister()
	update := func(any) { b.learnFrom(lister) }
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: update, UpdateFunc: func(_, o any) { update(o) }, DeleteFunc: update,
	}); err != nil {
		b.log.Warn("cannot follow the kubernetes service's endpoints", "err", err)
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// learnFrom makes the learned servers those the slices list ready.
func (b *Balancer) learnFrom(lister discoverylisters.EndpointSliceLister) {
	slices, err := lister.List(labels.Everything())
	if err != nil {
		return
	}
	want := map[string]bool{}
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		port, ok := slicePort(s)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				want[net.JoinHostPort(a, strconv.Itoa(int(port)))] = true
			}
		}
	}
	b.setLearned(want)
}

// slicePort is the port of the API in a slice: the one named https, or
// the only one.
func slicePort(s *discoveryv1.EndpointSlice) (int32, bool) {
	for _, p := range s.Ports {
		if p.Port != nil && p.Name != nil && *p.Name == httpsPortName {
			return *p.Port, true
		}
	}
	if len(s.Ports) == 1 && s.Ports[0].Port != nil {
		return *s.Ports[0].Port, true
	}
	return 0, false
}

// setLearned adds the servers of want not known yet, unhealthy until a
// probe says otherwise (the Service may list addresses this node cannot
// reach), and drops learned servers no longer in want.
func (b *Balancer) setLearned(want map[string]bool) {
	var added, removed []string
	b.mu.Lock()
	kept := b.endpoints[:0]
	for _, e := range b.endpoints {
		if e.configured || want[e.host] {
			kept = append(kept, e)
			continue
		}
		removed = append(removed, e.host)
		if b.current == e {
			b.current = nil
		}
	}
	b.endpoints = kept
	for h := range want {
		if b.find(h) == nil {
			b.endpoints = append(b.endpoints, &endpoint{host: h, lastErr: "not probed yet", downSince: time.Now()})
			added = append(added, h)
		}
	}
	b.mu.Unlock()
	if len(added)+len(removed) == 0 {
		return
	}
	sort.Strings(added)
	sort.Strings(removed)
	b.log.Info("API servers learned from the kubernetes service", "added", added, "removed", removed)
	select {
	case b.probeNow <- struct{}{}:
	default:
	}
}
