package garbagecollector

import (
	"context"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// monitor is the informer of one resource.
type monitor struct {
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer
	stop     chan struct{}
}

// ignored are resources the collector does not watch, as in Kubernetes:
// events are numerous, short-lived and never owners.
func ignored(gr schema.GroupResource) bool {
	return gr.Resource == "events" && (gr.Group == "" || gr.Group == "events.k8s.io")
}

// syncMonitors starts an informer for every deletable resource not yet
// watched and stops those of resources no longer served.
func (c *Controller) syncMonitors(ctx context.Context) error {
	lists, err := c.discovery.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return err
	}
	want := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "delete") ||
				!slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if ignored(gvr.GroupResource()) {
				continue
			}
			want[gvr] = gv.WithKind(r.Kind)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for gvr, m := range c.monitors {
		// A group that failed discovery keeps its monitors.
		if _, ok := want[gvr]; !ok && err == nil {
			close(m.stop)
			delete(c.monitors, gvr)
		}
	}
	for gvr, gvk := range want {
		if _, ok := c.monitors[gvr]; ok {
			continue
		}
		m, merr := c.newMonitor(gvr, gvk)
		if merr != nil {
			c.log.Warn("watching a resource", "resource", gvr.String(), "err", merr)
			continue
		}
		c.monitors[gvr] = m
		go m.informer.Run(m.stop)
	}
	return err
}

// newMonitor builds the informer of gvr. It reads object metadata only
// (PartialObjectMetadata, through the metadata client), so specs and
// statuses never cross the wire, and trims it further before it reaches
// the cache.
func (c *Controller) newMonitor(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (*monitor, error) {
	inf := metadatainformer.NewFilteredMetadataInformer(c.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if err := inf.SetTransform(trimMetadata); err != nil {
		return nil, err
	}
	push := func(typ eventType, obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			c.changes.Add(&event{typ: typ, obj: m, gvk: gvk})
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { push(addEvent, obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*metav1.PartialObjectMetadata)
			n, ok2 := newObj.(*metav1.PartialObjectMetadata)
			if ok1 && ok2 && !interesting(o, n) {
				return
			}
			push(updateEvent, newObj)
		},
		DeleteFunc: func(obj any) { push(deleteEvent, obj) },
	})
	if err != nil {
		return nil, err
	}
	return &monitor{gvk: gvk, informer: inf, stop: make(chan struct{})}, nil
}

// trimMetadata keeps the metadata the collector uses: labels,
// annotations and managedFields would only take memory. The kind is the
// monitor's, not the object's (meta.k8s.io PartialObjectMetadata).
func trimMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers, DeletionTimestamp: m.DeletionTimestamp,
		},
	}, nil
}

// waitForMonitors waits until every informer has listed its resource, or
// for the sync timeout.
func (c *Controller) waitForMonitors(ctx context.Context) {
	deadline := c.clock.Now().Add(c.cfg.SyncTimeout)
	for c.clock.Now().Before(deadline) && ctx.Err() == nil {
		c.mu.Lock()
		synced := true
		var lagging string
		for gvr, m := range c.monitors {
			if !m.informer.HasSynced() {
				synced, lagging = false, gvr.String()
				break
			}
		}
		c.mu.Unlock()
		if synced {
			return
		}
		select {
		case <-ctx.Done():
		case <-c.clock.After(50 * time.Millisecond):
		}
		if c.clock.Now().After(deadline) {
			c.log.Warn("starting before every resource was listed", "waiting-for", lagging)
		}
	}
}

func (c *Controller) stopMonitors() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for gvr, m := range c.monitors {
		close(m.stop)
		delete(c.monitors, gvr)
	}
}
