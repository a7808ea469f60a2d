package envvars

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"cairn/node/kubelet/downward"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// objects are the config maps and secrets the test sources serve.
type objects struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (o objects) sources() Sources {
	return Sources{
		ConfigMap: func(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
			if cm, ok := o.configMaps[ns+"/"+name]; ok {
				return cm, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
		},
		Secret: func(_ context.Context, ns, name string) (*corev1.Secret, error) {
			if s, ok := o.secrets[ns+"/"+name]; ok {
				return s, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
		},
		IPs:         downward.PodIPs{PodIPs: []string{"10.244.1.5"}, HostIPs: []string{"10.0.0.11"}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
	}
}

func testObjects() objects {
	return objects{
		configMaps: map[string]*corev1.ConfigMap{
			"ns/cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3"}},
		},
		secrets: map[string]*corev1.Secret{
			"ns/creds": {Data: map[string][]byte{"USER": []byte("alice"), "PASS": []byte("s3cret")}},
		},
	}
}

func testPod(c corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName: "n1", ServiceAccountName: "default", Containers: []corev1.Container{c},
			EnableServiceLinks: ptr.To(false),
		},
	}
}

func configMapKey(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func secretKey(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

func TestBuildResolvesEveryKindOfSource(t *testing.T) {
	tests := []struct {
		name    string
		c       corev1.Container
		want    []Var
		wantErr string
	}{
		{
			name: "value and reference to an earlier var",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "A", Value: "x"}, {Name: "B", Value: "$(A)-$(LATER)"}, {Name: "LATER", Value: "y"},
			}},
			want: []Var{{"A", "x"}, {"B", "x-$(LATER)"}, {"LATER", "y"}},
		},
		{
			name: "field refs",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "NAME", ValueFrom: fieldRef("metadata.name")},
				{Name: "NS", ValueFrom: fieldRef("metadata.namespace")},
				{Name: "UID", ValueFrom: fieldRef("metadata.uid")},
				{Name: "APP", ValueFrom: fieldRef("metadata.labels['app']")},
				{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
				{Name: "SA", ValueFrom: fieldRef("spec.serviceAccountName")},
				{Name: "IP", ValueFrom: fieldRef("status.podIP")},
				{Name: "HOST", ValueFrom: fieldRef("status.hostIP")},
			}},
			want: []Var{{"NAME", "web"}, {"NS", "ns"}, {"UID", "uid-1"}, {"APP", "web"}, {"NODE", "n1"},
				{"SA", "default"}, {"IP", "10.244.1.5"}, {"HOST", "10.0.0.11"}},
		},
		{
			name: "resource field refs default to allocatable",
			c: corev1.Container{
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				Env: []corev1.EnvVar{
					{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
					{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
				},
			},
			want: []Var{{"MEM", "64"}, {"CPU", "4"}},
		},
		{
			name: "config map and secret keys",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "MODE", ValueFrom: configMapKey("cfg", "MODE", false)},
				{Name: "USER", ValueFrom: secretKey("creds", "USER", false)},
			}},
			want: []Var{{"MODE", "fast"}, {"USER", "alice"}},
		},
		{
			name: "optional missing sources and keys are left out",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: configMapKey("nope", "x", true)},
				{Name: "B", ValueFrom: configMapKey("cfg", "nokey", true)},
				{Name: "C", ValueFrom: secretKey("nope", "x", true)},
				{Name: "D", ValueFrom: secretKey("creds", "nokey", true)},
				{Name: "E", Value: "kept"},
			}},
			want: []Var{{"E", "kept"}},
		},
		{
			name:    "missing config map",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: configMapKey("nope", "x", false)}}},
			wantErr: `configmaps "nope" not found`,
		},
		{
			name:    "missing key",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "A", ValueFrom: secretKey("creds", "x", false)}}},
			wantErr: "couldn't find key x in Secret ns/creds",
		},
		{
			name: "envFrom with prefix, env overrides and may refer to it",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{
					{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}},
				},
				Env: []corev1.EnvVar{{Name: "CFG_MODE", Value: "slow"}, {Name: "WHO", Value: "$(USER)"}},
			},
			want: []Var{{"CFG_LEVEL", "3"}, {"CFG_MODE", "slow"}, {"PASS", "s3cret"}, {"USER", "alice"}, {"WHO", "alice"}},
		},
		{
			name: "missing envFrom source",
			c: corev1.Container{EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}},
			}},
			wantErr: `configmaps "nope" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Name = "app"
			got, err := Build(context.Background(), testPod(tt.c), &tt.c, testObjects().sources())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func service(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func TestBuildAddsServiceVariables(t *testing.T) {
	services := []*corev1.Service{
		service("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}),
		service("ns", "redis-primary", "10.96.0.20", corev1.ServicePort{Port: 6379}, corev1.ServicePort{Name: "metrics", Port: 9121, Protocol: corev1.ProtocolTCP}),
		service("ns", "headless", "None", corev1.ServicePort{Port: 80}),
		service("other", "elsewhere", "10.96.0.30", corev1.ServicePort{Port: 80}),
	}
	tests := []struct {
		name     string
		links    bool
		userEnv  []corev1.EnvVar
		want     map[string]string
		notThere []string
	}{
		{
			name:  "links on",
			links: true,
			want: map[string]string{
				"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
				"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
				"REDIS_PRIMARY_SERVICE_HOST": "10.96.0.20", "REDIS_PRIMARY_SERVICE_PORT": "6379",
				"REDIS_PRIMARY_SERVICE_PORT_METRICS": "9121", "REDIS_PRIMARY_PORT": "tcp://10.96.0.20:6379",
				"REDIS_PRIMARY_PORT_6379_TCP": "tcp://10.96.0.20:6379", "REDIS_PRIMARY_PORT_6379_TCP_PROTO": "tcp",
				"REDIS_PRIMARY_PORT_6379_TCP_PORT": "6379", "REDIS_PRIMARY_PORT_9121_TCP_ADDR": "10.96.0.20",
			},
			notThere: []string{"HEADLESS_SERVICE_HOST", "ELSEWHERE_SERVICE_HOST"},
		},
		{
			name:     "links off keeps the kubernetes service",
			want:     map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
			notThere: []string{"REDIS_PRIMARY_SERVICE_HOST"},
		},
		{
			name:    "user value wins and service vars can be referenced",
			links:   true,
			userEnv: []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"}, {Name: "URL", Value: "redis://$(REDIS_PRIMARY_SERVICE_HOST)"}},
			want:    map[string]string{"KUBERNETES_SERVICE_HOST": "mine", "URL": "redis://10.96.0.20"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := corev1.Container{Name: "app", Env: tt.userEnv}
			pod := testPod(c)
			pod.Spec.EnableServiceLinks = &tt.links
			src := testObjects().sources()
			src.Services = services
			vars, err := Build(context.Background(), pod, &c, src)
			if err != nil {
				t.Fatal(err)
			}
			m := Map(vars)
			if len(m) != len(vars) {
				t.Errorf("duplicate variables in %v", vars)
			}
			for k, v := range tt.want {
				if m[k] != v {
					t.Errorf("%s = %q, want %q", k, m[k], v)
				}
			}
			for _, k := range tt.notThere {
				if _, ok := m[k]; ok {
					t.Errorf("%s is set", k)
				}
			}
		})
	}
}
