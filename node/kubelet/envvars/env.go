package envvars

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"cairn/node/kubelet/downward"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Sources reach what a container's environment refers to.
type Sources struct {
	// ConfigMap and Secret get an object of the pod's namespace; a
	// missing one is an apierrors NotFound error.
	ConfigMap func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret    func(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// Services are the services the node knows, of every namespace.
	Services []*corev1.Service
	// IPs are the pod's and the node's addresses.
	IPs downward.PodIPs
	// Allocatable is the node's, for resourceFieldRef of unset limits.
	Allocatable corev1.ResourceList
}

// Var is one variable of a container's environment.
type Var struct {
	Name, Value string
}

// Build returns container's environment in pod, resolved as the kubelet
// does: envFrom first (env overrides it), then env in order, each value
// expanded against the variables before it and the service variables,
// and last the service variables no one defined. An error says which
// source is missing; it is the message of the container's
// CreateContainerConfigError.
func Build(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src Sources) ([]Var, error) {
	r := resolver{ctx: ctx, pod: pod, src: src, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	links := true
	if pod.Spec.EnableServiceLinks != nil {
		links = *pod.Spec.EnableServiceLinks
	}
	services := ServiceVars(LinkedServices(src.Services, pod.Namespace, links))
	env := orderedVars{values: map[string]string{}}
	for _, from := range c.EnvFrom {
		data, err := r.envFrom(from)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := from.Prefix + k
			if name == "" || strings.Contains(name, "=") {
				continue // no process environment can hold it
			}
			env.set(name, data[k])
		}
	}
	lookup := Lookup(env.values, services)
	for _, e := range c.Env {
		v := e.Value
		switch {
		case v != "":
			v = Expand(v, lookup)
		case e.ValueFrom != nil:
			var skip bool
			var err error
			v, skip, err = r.valueFrom(c, e.ValueFrom)
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
		}
		env.set(e.Name, v)
	}
	extra := make([]string, 0, len(services))
	for k := range services {
		if _, ok := env.values[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		env.set(k, services[k])
	}
	out := make([]Var, len(env.order))
	for i, k := range env.order {
		out[i] = Var{Name: k, Value: env.values[k]}
	}
	return out, nil
}

// Map returns vars as a map, for command and args expansion.
func Map(vars []Var) map[string]string {
	m := make(map[string]string, len(vars))
	for _, v := range vars {
		m[v.Name] = v.Value
	}
	return m
}

// orderedVars keeps variables in the order they were first defined.
type orderedVars struct {
	order  []string
	values map[string]string
}

func (o *orderedVars) set(k, v string) {
	if _, ok := o.values[k]; !ok {
		o.order = append(o.order, k)
	}
	o.values[k] = v
}

// resolver fetches each config map and secret once per Build.
type resolver struct {
	ctx        context.Context
	pod        *corev1.Pod
	src        Sources
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (r *resolver) configMap(name string) (*corev1.ConfigMap, error) {
	if cm, ok := r.configMaps[name]; ok {
		return cm, nil
	}
	if r.src.ConfigMap == nil {
		return nil, fmt.Errorf("configmap %q: no configmap source", name)
	}
	cm, err := r.src.ConfigMap(r.ctx, r.pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	r.configMaps[name] = cm
	return cm, nil
}

func (r *resolver) secret(name string) (*corev1.Secret, error) {
	if s, ok := r.secrets[name]; ok {
		return s, nil
	}
	if r.src.Secret == nil {
		return nil, fmt.Errorf("secret %q: no secret source", name)
	}
	s, err := r.src.Secret(r.ctx, r.pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	r.secrets[name] = s
	return s, nil
}

// envFrom returns the data of one envFrom source; a missing optional
// source gives nothing.
func (r *resolver) envFrom(from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := r.configMap(from.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, err
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := r.secret(from.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, err
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

// valueFrom resolves one valueFrom source; skip is true when an optional
// source or key is missing, and the variable is then left out.
func (r *resolver) valueFrom(c *corev1.Container, from *corev1.EnvVarSource) (v string, skip bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err = downward.FieldValue(r.pod, from.FieldRef.FieldPath, r.src.IPs)
		return v, false, err
	case from.ResourceFieldRef != nil:
		target := c
		if name := from.ResourceFieldRef.ContainerName; name != "" && name != c.Name {
			var ok bool
			if target, ok = downward.FindContainer(r.pod, name); !ok {
				return "", false, fmt.Errorf("resourceFieldRef: no container %q in the pod", name)
			}
		}
		v, err = downward.ResourceValue(target, from.ResourceFieldRef, r.src.Allocatable)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := isTrue(ref.Optional)
		cm, err := r.configMap(ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, false, nil
		}
		if b, ok := cm.BinaryData[ref.Key]; ok {
			return string(b), false, nil
		}
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := isTrue(ref.Optional)
		s, err := r.secret(ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, err
		}
		if b, ok := s.Data[ref.Key]; ok {
			return string(b), false, nil
		}
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	}
	return "", false, nil
}

func isTrue(b *bool) bool { return b != nil && *b }
