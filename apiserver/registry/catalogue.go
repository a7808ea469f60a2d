package registry

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"cairn/apiserver/registry/apps"
	"cairn/apiserver/registry/batch"
	"cairn/apiserver/registry/coordination"
	"cairn/apiserver/registry/core"
	"cairn/apiserver/registry/discovery"
	"cairn/apiserver/registry/rbac"
	"cairn/apiserver/registry/scheduling"
)

// categoryAll is what "kubectl get all" lists.
var categoryAll = []string{"all"}

// All returns every served resource, in a stable order: core/v1 first,
// then apps, batch, coordination, discovery, rbac and scheduling. Each call builds
// fresh values, so callers may keep and index them (see NewCatalogue).
func All() []*Resource {
	status := []string{"status"}
	statusScale := []string{"status", "scale"}
	scaler := apps.Scaler{}
	return []*Resource{
		// core/v1
		{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", ListKind: "NamespaceList",
			ShortNames: []string{"ns"}, Subresources: []string{"status", "finalize"},
			New: newOf[corev1.Namespace], NewList: newOf[corev1.NamespaceList],
			Strategy: core.NamespaceStrategy(), SelectableFields: fieldsOf(core.NamespaceFields)},
		{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", ListKind: "PodList", Namespaced: true,
			ShortNames: []string{"po"}, Categories: categoryAll, Subresources: []string{"status", "ephemeralcontainers", "binding", "log", "eviction", "exec", "attach", "portforward"},
			New: newOf[corev1.Pod], NewList: newOf[corev1.PodList],
			Strategy: core.PodStrategy(), SelectableFields: fieldsOf(core.PodFields),
			ObjectSubresources: map[string]ObjectSubresource{
				"ephemeralcontainers": {Fields: []string{"spec", "ephemeralContainers"}, Strategy: core.PodEphemeralContainersStrategy()},
			}},
		{GVR: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node", ListKind: "NodeList",
			ShortNames: []string{"no"}, Subresources: status,
			New: newOf[corev1.Node], NewList: newOf[corev1.NodeList],
			Strategy: core.NodeStrategy(), SelectableFields: fieldsOf(core.NodeFields)},
		{GVR: corev1.SchemeGroupVersion.WithResource("services"), Kind: "Service", ListKind: "ServiceList", Namespaced: true,
			ShortNames: []string{"svc"}, Categories: categoryAll, Subresources: status,
			New: newOf[corev1.Service], NewList: newOf[corev1.ServiceList],
			Strategy: core.ServiceStrategy(), SelectableFields: fieldsOf(core.ServiceFields)},
		{GVR: corev1.SchemeGroupVersion.WithResource("endpoints"), Kind: "Endpoints", ListKind: "EndpointsList", Namespaced: true,
			ShortNames: []string{"ep"},
			New:        newOf[corev1.Endpoints], NewList: newOf[corev1.EndpointsList],
			Strategy: core.EndpointsStrategy(), SelectableFields: metaFields(true)},
		{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", ListKind: "ConfigMapList", Namespaced: true,
			ShortNames: []string{"cm"},
			New:        newOf[corev1.ConfigMap], NewList: newOf[corev1.ConfigMapList],
			Strategy: core.ConfigMapStrategy(), SelectableFields: metaFields(true)},
		{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", ListKind: "SecretList", Namespaced: true,
			New: newOf[corev1.Secret], NewList: newOf[corev1.SecretList],
			Strategy: core.SecretStrategy(), SelectableFields: fieldsOf(core.SecretFields)},
		{GVR: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Kind: "ServiceAccount", ListKind: "ServiceAccountList", Namespaced: true,
			ShortNames: []string{"sa"}, Subresources: []string{"token"},
			New: newOf[corev1.ServiceAccount], NewList: newOf[corev1.ServiceAccountList],
			Strategy: core.ServiceAccountStrategy(), SelectableFields: metaFields(true)},
		{GVR: corev1.SchemeGroupVersion.WithResource("events"), Kind: "Event", ListKind: "EventList", Namespaced: true,
			ShortNames: []string{"ev"},
			New:        newOf[corev1.Event], NewList: newOf[corev1.EventList],
			Strategy: core.EventStrategy(), SelectableFields: fieldsOf(core.EventFields)},
		{GVR: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Kind: "PersistentVolumeClaim", ListKind: "PersistentVolumeClaimList", Namespaced: true,
			ShortNames: []string{"pvc"}, Subresources: status,
			New: newOf[corev1.PersistentVolumeClaim], NewList: newOf[corev1.PersistentVolumeClaimList],
			Strategy: core.PersistentVolumeClaimStrategy(), SelectableFields: metaFields(true)},

		// apps/v1
		{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", ListKind: "DeploymentList", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: categoryAll, Subresources: statusScale,
			New: newOf[appsv1.Deployment], NewList: newOf[appsv1.DeploymentList],
			Strategy: apps.DeploymentStrategy(), SelectableFields: metaFields(true), Scale: scaler},
		{GVR: appsv1.SchemeGroupVersion.WithResource("replicasets"), Kind: "ReplicaSet", ListKind: "ReplicaSetList", Namespaced: true,
			ShortNames: []string{"rs"}, Categories: categoryAll, Subresources: statusScale,
			New: newOf[appsv1.ReplicaSet], NewList: newOf[appsv1.ReplicaSetList],
			Strategy: apps.ReplicaSetStrategy(), SelectableFields: fieldsOf(apps.ReplicaSetFields), Scale: scaler},
		{GVR: appsv1.SchemeGroupVersion.WithResource("statefulsets"), Kind: "StatefulSet", ListKind: "StatefulSetList", Namespaced: true,
			ShortNames: []string{"sts"}, Categories: categoryAll, Subresources: statusScale,
			New: newOf[appsv1.StatefulSet], NewList: newOf[appsv1.StatefulSetList],
			Strategy: apps.StatefulSetStrategy(), SelectableFields: metaFields(true), Scale: scaler},
		{GVR: appsv1.SchemeGroupVersion.WithResource("daemonsets"), Kind: "DaemonSet", ListKind: "DaemonSetList", Namespaced: true,
			ShortNames: []string{"ds"}, Categories: categoryAll, Subresources: status,
			New: newOf[appsv1.DaemonSet], NewList: newOf[appsv1.DaemonSetList],
			Strategy: apps.DaemonSetStrategy(), SelectableFields: metaFields(true)},
		{GVR: appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), Kind: "ControllerRevision", ListKind: "ControllerRevisionList", Namespaced: true,
			New: newOf[appsv1.ControllerRevision], NewList: newOf[appsv1.ControllerRevisionList],
			Strategy: apps.ControllerRevisionStrategy(), SelectableFields: metaFields(true)},

		// batch/v1
		{GVR: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job", ListKind: "JobList", Namespaced: true,
			Categories: categoryAll, Subresources: status,
			New: newOf[batchv1.Job], NewList: newOf[batchv1.JobList],
			Strategy: batch.JobStrategy(), SelectableFields: fieldsOf(batch.JobFields)},
		{GVR: batchv1.SchemeGroupVersion.WithResource("cronjobs"), Kind: "CronJob", ListKind: "CronJobList", Namespaced: true,
			ShortNames: []string{"cj"}, Categories: categoryAll, Subresources: status,
			New: newOf[batchv1.CronJob], NewList: newOf[batchv1.CronJobList],
			Strategy: batch.CronJobStrategy(), SelectableFields: metaFields(true)},

		// coordination.k8s.io/v1
		{GVR: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease", ListKind: "LeaseList", Namespaced: true,
			New: newOf[coordinationv1.Lease], NewList: newOf[coordinationv1.LeaseList],
			Strategy: coordination.LeaseStrategy(), SelectableFields: metaFields(true)},

		// discovery.k8s.io/v1
		{GVR: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Kind: "EndpointSlice", ListKind: "EndpointSliceList", Namespaced: true,
			New: newOf[discoveryv1.EndpointSlice], NewList: newOf[discoveryv1.EndpointSliceList],
			Strategy: discovery.EndpointSliceStrategy(), SelectableFields: metaFields(true)},

		// rbac.authorization.k8s.io/v1
		{GVR: rbacv1.SchemeGroupVersion.WithResource("roles"), Kind: "Role", ListKind: "RoleList", Namespaced: true,
			New: newOf[rbacv1.Role], NewList: newOf[rbacv1.RoleList],
			Strategy: rbac.RoleStrategy(), SelectableFields: metaFields(true)},
		{GVR: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), Kind: "RoleBinding", ListKind: "RoleBindingList", Namespaced: true,
			New: newOf[rbacv1.RoleBinding], NewList: newOf[rbacv1.RoleBindingList],
			Strategy: rbac.RoleBindingStrategy(), SelectableFields: metaFields(true)},
		{GVR: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole", ListKind: "ClusterRoleList",
			New: newOf[rbacv1.ClusterRole], NewList: newOf[rbacv1.ClusterRoleList],
			Strategy: rbac.ClusterRoleStrategy(), SelectableFields: metaFields(false)},
		{GVR: rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), Kind: "ClusterRoleBinding", ListKind: "ClusterRoleBindingList",
			New: newOf[rbacv1.ClusterRoleBinding], NewList: newOf[rbacv1.ClusterRoleBindingList],
			Strategy: rbac.ClusterRoleBindingStrategy(), SelectableFields: metaFields(false)},

		// scheduling.k8s.io/v1
		{GVR: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), Kind: "PriorityClass", ListKind: "PriorityClassList",
			ShortNames: []string{"pc"},
			New:        newOf[schedulingv1.PriorityClass], NewList: newOf[schedulingv1.PriorityClassList],
			Strategy: scheduling.PriorityClassStrategy(), SelectableFields: metaFields(false)},
	}
}

// newOf returns a new, empty T as a runtime.Object.
func newOf[T any, PT interface {
	*T
	runtime.Object
}]() runtime.Object {
	return PT(new(T))
}

// fieldsOf adapts a typed field function to Resource.SelectableFields.
func fieldsOf[T runtime.Object](fn func(T) fields.Set) func(runtime.Object) fields.Set {
	return func(obj runtime.Object) fields.Set {
		t, ok := obj.(T)
		if !ok {
			var want T
			panic(fmt.Sprintf("registry: fields of %T asked of %T", want, obj))
		}
		return fn(t)
	}
}

// metaFields selects on metadata.name (and metadata.namespace) only.
func metaFields(namespaced bool) func(runtime.Object) fields.Set {
	return func(obj runtime.Object) fields.Set {
		m, err := meta.Accessor(obj)
		if err != nil {
			panic(fmt.Sprintf("registry: %T has no metadata: %v", obj, err))
		}
		return core.MetaFields(m.GetName(), m.GetNamespace(), namespaced)
	}
}

// Catalogue indexes resources for the lookups the HTTP layer and
// discovery make on every request.
type Catalogue struct {
	all     []*Resource
	byGVR   map[schema.GroupVersionResource]*Resource
	byKind  map[schema.GroupVersionKind]*Resource
	byShort map[string]*Resource
}

// NewCatalogue indexes rs. Should two resources share a short name, the
// first one wins, as kubectl prefers the core group.
func NewCatalogue(rs []*Resource) *Catalogue {
	c := &Catalogue{
		all:     rs,
		byGVR:   make(map[schema.GroupVersionResource]*Resource, len(rs)),
		byKind:  make(map[schema.GroupVersionKind]*Resource, len(rs)),
		byShort: map[string]*Resource{},
	}
	for _, r := range rs {
		c.byGVR[r.GVR] = r
		c.byKind[r.GVK()] = r
		for _, s := range r.ShortNames {
			if _, taken := c.byShort[s]; !taken {
				c.byShort[s] = r
			}
		}
	}
	return c
}

// Resources returns the indexed resources in their original order.
func (c *Catalogue) Resources() []*Resource { return c.all }

// Lookup finds a resource by group, version and plural name; group is ""
// for core.
func (c *Catalogue) Lookup(group, version, resource string) (*Resource, bool) {
	r, ok := c.byGVR[schema.GroupVersionResource{Group: group, Version: version, Resource: resource}]
	return r, ok
}

// LookupKind finds the resource that serves a kind, e.g. apps/v1 Deployment.
func (c *Catalogue) LookupKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	r, ok := c.byKind[gvk]
	return r, ok
}

// LookupShortName finds a resource by short name, e.g. "deploy".
func (c *Catalogue) LookupShortName(name string) (*Resource, bool) {
	r, ok := c.byShort[name]
	return r, ok
}

// Lookup finds one of All's resources by group, version and plural name.
// It builds the catalogue on each call; hold a Catalogue where it matters.
func Lookup(group, version, resource string) (*Resource, bool) {
	return NewCatalogue(All()).Lookup(group, version, resource)
}

// LookupKind finds one of All's resources by kind.
func LookupKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	return NewCatalogue(All()).LookupKind(gvk)
}

// LookupShortName finds one of All's resources by short name.
func LookupShortName(name string) (*Resource, bool) {
	return NewCatalogue(All()).LookupShortName(name)
}
