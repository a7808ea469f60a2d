package controllerref

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func testPod(name string, lbl map[string]string, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: lbl}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: owner,
			Controller: new(true)}}
	}
	return p
}

func TestClaimPods(t *testing.T) {
	web := map[string]string{"app": "web"}
	other := map[string]string{"app": "db"}
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rs-uid"}}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		canAdopt    error
		wantClaimed bool
		wantOwner   types.UID // the pod's controller afterwards, "" for none
		wantErr     bool
	}{
		{"owned and matching", testPod("a", web, "rs-uid"), nil, true, "rs-uid", false},
		{"owned by another", testPod("a", web, "other-uid"), nil, false, "other-uid", false},
		{"orphan adopted", testPod("a", web, ""), nil, true, "rs-uid", false},
		{"orphan not matching", testPod("a", other, ""), nil, false, "", false},
		{"owned but no longer matching is released", testPod("a", other, "rs-uid"), nil, false, "", false},
		{"no adoption by a dying owner", testPod("a", web, ""), errors.New("being deleted"), false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset(tt.pod)
			m := &Manager{Controller: owner, Kind: rsKind, Match: SelectorMatch(labels.SelectorFromSet(web)),
				CanAdopt: func(context.Context) error { return tt.canAdopt }}
			orphan := metav1.GetControllerOf(tt.pod) == nil
			claimed, err := ClaimPods(ctx, m, client, []*corev1.Pod{tt.pod})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if (len(claimed) == 1) != tt.wantClaimed {
				t.Fatalf("claimed %d pods, want claimed %v", len(claimed), tt.wantClaimed)
			}
			got, err := client.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ctrl types.UID
			if ref := metav1.GetControllerOf(got); ref != nil {
				ctrl = ref.UID
				if orphan && (ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion || ref.Kind != "ReplicaSet" || ref.Name != "web") {
					t.Fatalf("owner reference %+v", ref)
				}
			}
			if ctrl != tt.wantOwner {
				t.Fatalf("controller afterwards %q, want %q", ctrl, tt.wantOwner)
			}
		})
	}
}
