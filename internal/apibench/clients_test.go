package apibench

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

func TestRestConfigForOneServerDoesNotThrottle(t *testing.T) {
	base := &rest.Config{Host: "https://kubeconfig:6443", QPS: 5, Burst: 10}
	tests := []struct {
		name        string
		contentType string
		wantType    string
	}{
		{"protobuf as controllers", ContentTypeProtobuf, mediaProtobuf},
		{"json as kubectl", ContentTypeJSON, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := restConfigFor(base, "https://b:16443", Config{QPS: DefaultQPS, Burst: DefaultBurst, ContentType: tt.contentType})
			if rc.Host != "https://b:16443" || rc.QPS != DefaultQPS || rc.Burst != DefaultBurst || rc.ContentType != tt.wantType {
				t.Errorf("config %s qps %v burst %d type %q", rc.Host, rc.QPS, rc.Burst, rc.ContentType)
			}
			if base.Host != "https://kubeconfig:6443" || base.QPS != 5 {
				t.Error("the base config changed")
			}
		})
	}
}

func TestPodNamesAndLabelsAreValid(t *testing.T) {
	id := newRunID()
	for _, name := range []string{podName(id, 0), podName(id, 99999), podName(id, 10000) + "-watch"} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("pod name %q: %v", name, errs)
		}
	}
	if podName(id, 1) == podName(id, 2) || podName(id, 1) == podName(newRunID(), 1) {
		t.Error("pod names are not unique per index and run")
	}
	p := newPod(id, podName(id, 1))
	for k, v := range p.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			t.Errorf("label %s=%s: %v", k, v, errs)
		}
	}
	if p.Labels[RunLabel] != id || len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image == "" {
		t.Errorf("pod %+v", p)
	}
}
