package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// debugPatch is the request `kubectl debug POD -it --image=IMAGE
// --target=TARGET` makes: a strategic merge patch of the pod it read,
// against pods/POD/ephemeralcontainers, adding one ephemeral container.
func debugPatch(t *testing.T, pod *corev1.Pod, name, image, target string) []byte {
	t.Helper()
	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = append(debug.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: image, Stdin: true, TTY: true, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}},
		},
		TargetContainerName: target,
	})
	before, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	after, err := json.Marshal(debug)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, pod)
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

func ephemeralNames(p *corev1.Pod) []string {
	var names []string
	for _, ec := range p.Spec.EphemeralContainers {
		names = append(names, ec.Name)
	}
	return names
}

// wantInvalid fails unless err is a 422 whose message says says.
func wantInvalid(t *testing.T, err error, says string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), says) {
		t.Fatalf("got %v, want 422 saying %q", err, says)
	}
}

// TestKubectlDebugAddsAnEphemeralContainer drives pods/ephemeralcontainers
// the way kubectl debug and client-go do: the added container is stored
// with its defaults, the rest of the request is ignored, watchers see the
// pod change, and the write is recorded as the subresource's.
func TestKubectlDebugAddsAnEphemeralContainer(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	createNamespace(t, c, "team")
	pods := c.client(0).CoreV1().Pods("team")
	created, err := pods.Create(ctx, testPod("app"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, binding("app", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := pods.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("GetIsThePod", func(t *testing.T) {
		var got corev1.Pod
		err := c.client(1).CoreV1().RESTClient().Get().Namespace("team").Resource("pods").Name("app").
			SubResource("ephemeralcontainers").Do(ctx).Into(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got.UID != created.UID || len(got.Spec.Containers) != 1 || got.Spec.NodeName != "n1" {
			t.Fatalf("GET pods/app/ephemeralcontainers: %+v", got.ObjectMeta)
		}
	})

	t.Run("StrategicMergePatchLikeKubectlDebug", func(t *testing.T) {
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=app", ResourceVersion: pod.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		got, err := c.client(1).CoreV1().Pods("team").Patch(ctx, "app", types.StrategicMergePatchType,
			debugPatch(t, pod, "debugger-x7k2p", "busybox:1.36", "web"), metav1.PatchOptions{FieldManager: "kubectl-debug"}, "ephemeralcontainers")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.EphemeralContainers) != 1 {
			t.Fatalf("ephemeral containers %v", ephemeralNames(got))
		}
		ec := got.Spec.EphemeralContainers[0]
		if ec.Name != "debugger-x7k2p" || ec.TargetContainerName != "web" || !ec.TTY || !ec.Stdin ||
			ec.ImagePullPolicy != corev1.PullIfNotPresent || ec.TerminationMessagePath != corev1.TerminationMessagePathDefault {
			t.Errorf("stored ephemeral container %+v", ec)
		}
		if got.Generation != pod.Generation+1 {
			t.Errorf("generation %d, want %d: the spec changed", got.Generation, pod.Generation+1)
		}
		e := entryOf(got, "kubectl-debug")
		if e == nil || e.Subresource != "ephemeralcontainers" || e.Operation != metav1.ManagedFieldsOperationUpdate ||
			!owns(got, "kubectl-debug", "f:spec", "f:ephemeralContainers") || owns(got, "kubectl-debug", "f:metadata") {
			t.Errorf("managedFields %+v", got.ManagedFields)
		}
		select {
		case ev := <-w.ResultChan():
			p, _ := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Modified || p == nil || len(p.Spec.EphemeralContainers) != 1 || p.ResourceVersion != got.ResourceVersion {
				t.Errorf("watch event %s %+v", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatal("no watch event for the added ephemeral container")
		}
	})

	t.Run("UpdateTakesOnlyEphemeralContainers", func(t *testing.T) {
		cur, err := pods.Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req := cur.DeepCopy()
		req.Labels = map[string]string{"app": "changed"}
		req.Spec.Containers[0].Image = "web:2"
		req.Status.Phase = corev1.PodFailed
		req.Spec.EphemeralContainers = append(req.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg2", Image: "busybox"}})
		got, err := c.client(2).CoreV1().Pods("team").UpdateEphemeralContainers(ctx, "app", req, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["app"] != "web" || got.Spec.Containers[0].Image != "web:1" || got.Status.Phase != cur.Status.Phase {
			t.Errorf("fields besides spec.ephemeralContainers were taken: labels %v image %s phase %s",
				got.Labels, got.Spec.Containers[0].Image, got.Status.Phase)
		}
		if names := ephemeralNames(got); strings.Join(names, ",") != "debugger-x7k2p,dbg2" {
			t.Fatalf("ephemeral containers %v", names)
		}
		if ec := got.Spec.EphemeralContainers[1]; ec.ImagePullPolicy != corev1.PullAlways || ec.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
			t.Errorf("defaults of an untagged image: %+v", ec)
		}
		stored, err := pods.Get(ctx, "app", metav1.GetOptions{})
		if err != nil || len(stored.Spec.EphemeralContainers) != 2 || stored.Labels["app"] != "web" {
			t.Fatalf("stored pod: %v %v", err, stored)
		}

		_, err = pods.UpdateEphemeralContainers(ctx, "app", req, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Errorf("update with a stale resourceVersion: %v, want 409", err)
		}
	})

	t.Run("JSONAndMergePatches", func(t *testing.T) {
		add := `[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"dbg3","image":"busybox:1.36"}}]`
		got, err := pods.Patch(ctx, "app", types.JSONPatchType, []byte(add), metav1.PatchOptions{}, "ephemeralcontainers")
		if err != nil {
			t.Fatal(err)
		}
		// A merge patch replaces the list: the existing ones must be in it.
		list := got.DeepCopy().Spec.EphemeralContainers
		list = append(list, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg4", Image: "busybox:1.36"}})
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": list}})
		got, err = pods.Patch(ctx, "app", types.MergePatchType, body, metav1.PatchOptions{}, "ephemeralcontainers")
		if err != nil {
			t.Fatal(err)
		}
		if names := ephemeralNames(got); strings.Join(names, ",") != "debugger-x7k2p,dbg2,dbg3,dbg4" {
			t.Fatalf("ephemeral containers %v", names)
		}
	})

	t.Run("ServerSideApply", func(t *testing.T) {
		cfg := corev1apply.Pod("app", "team").WithSpec(corev1apply.PodSpec().WithEphemeralContainers(
			corev1apply.EphemeralContainer().WithName("dbg5").WithImage("busybox:1.36").WithTargetContainerName("web")))
		body, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pods.Patch(ctx, "app", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "debugger"}, "ephemeralcontainers")
		if err != nil {
			t.Fatal(err)
		}
		e := entryOf(got, "debugger")
		if len(got.Spec.EphemeralContainers) != 5 || e == nil || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "ephemeralcontainers" {
			t.Fatalf("after apply: %v, managedFields %+v", ephemeralNames(got), got.ManagedFields)
		}
	})

	t.Run("PendingPodAcceptsThem", func(t *testing.T) {
		// As in Kubernetes: the kubelet starts them once the pod runs.
		p, err := pods.Create(ctx, testPod("pending"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := pods.Patch(ctx, "pending", types.StrategicMergePatchType, debugPatch(t, p, "dbg", "busybox:1.36", ""), metav1.PatchOptions{}, "ephemeralcontainers")
		if err != nil || len(got.Spec.EphemeralContainers) != 1 || got.Spec.NodeName != "" {
			t.Fatalf("pending pod: %v", err)
		}
	})

	t.Run("OnlyGetUpdateAndPatch", func(t *testing.T) {
		err := c.client(0).CoreV1().RESTClient().Delete().Namespace("team").Resource("pods").Name("app").SubResource("ephemeralcontainers").Do(ctx).Error()
		if !apierrors.IsMethodNotSupported(err) {
			t.Errorf("DELETE pods/app/ephemeralcontainers: %v, want 405", err)
		}
		if _, err := pods.Get(ctx, "app", metav1.GetOptions{}); err != nil {
			t.Errorf("the pod after a refused DELETE of its subresource: %v", err)
		}
		_, err = c.client(0).CoreV1().Services("team").Patch(ctx, "nope", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}, "ephemeralcontainers")
		if !apierrors.IsNotFound(err) {
			t.Errorf("services/x/ephemeralcontainers: %v, want 404", err)
		}
	})
}

// TestEphemeralContainerRefusals: what Kubernetes refuses with 422, said
// so that the user knows what to change.
func TestEphemeralContainerRefusals(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	createNamespace(t, c, "team")
	pods := c.client(0).CoreV1().Pods("team")
	if _, err := pods.Create(ctx, testPod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	add := func(ec corev1.EphemeralContainer) error {
		t.Helper()
		cur, err := pods.Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, ec)
		_, err = pods.UpdateEphemeralContainers(ctx, "app", cur, metav1.UpdateOptions{})
		return err
	}
	debugger := func(name string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1.36"}}
	}
	if err := add(debugger("dbg")); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}

	tests := []struct {
		name string
		call func() error
		says string
	}{
		{"ChangeAnExistingOne", func() error {
			cur, _ := pods.Get(ctx, "app", metav1.GetOptions{})
			cur.Spec.EphemeralContainers[0].Image = "busybox:1.37"
			_, err := pods.UpdateEphemeralContainers(ctx, "app", cur, metav1.UpdateOptions{})
			return err
		}, `existing ephemeral container "dbg" may not be changed`},
		{"RemoveAnExistingOne", func() error {
			_, err := pods.Patch(ctx, "app", types.MergePatchType, []byte(`{"spec":{"ephemeralContainers":[]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
			return err
		}, `existing ephemeral container "dbg" may not be removed`},
		{"Ports", func() error {
			ec := debugger("p")
			ec.Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
			return add(ec)
		}, "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an ephemeral container"},
		{"Probes", func() error {
			ec := debugger("p")
			ec.ReadinessProbe = probe
			return add(ec)
		}, "spec.ephemeralContainers[1].readinessProbe: Forbidden: cannot be set for an ephemeral container"},
		{"Resources", func() error {
			ec := debugger("p")
			ec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
			return add(ec)
		}, "spec.ephemeralContainers[1].resources: Forbidden: cannot be set for an ephemeral container"},
		{"UnknownTarget", func() error {
			ec := debugger("p")
			ec.TargetContainerName = "nope"
			return add(ec)
		}, `spec.ephemeralContainers[1].targetContainerName: Not found: "nope"`},
		{"NameOfAContainer", func() error { return add(debugger("web")) }, `spec.ephemeralContainers[1].name: Duplicate value: "web"`},
		{"NoImage", func() error {
			ec := debugger("p")
			ec.Image = ""
			return add(ec)
		}, "spec.ephemeralContainers[1].image: Required value"},
		{"ThroughAPodUpdate", func() error {
			cur, _ := pods.Get(ctx, "app", metav1.GetOptions{})
			cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, debugger("p"))
			_, err := pods.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}, "spec.ephemeralContainers: Forbidden: may not be changed by updating the pod: add ephemeral containers through the pods/ephemeralcontainers subresource"},
		{"ThroughAPodPatch", func() error {
			_, err := pods.Patch(ctx, "app", types.StrategicMergePatchType, []byte(`{"spec":{"ephemeralContainers":[{"name":"p","image":"busybox"}]}}`), metav1.PatchOptions{})
			return err
		}, "add ephemeral containers through the pods/ephemeralcontainers subresource"},
		{"OnCreate", func() error {
			p := testPod("new")
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger("dbg")}
			_, err := pods.Create(ctx, p, metav1.CreateOptions{})
			return err
		}, "spec.ephemeralContainers: Forbidden: cannot be set on create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantInvalid(t, tt.call(), tt.says)
		})
	}
	got, err := pods.Get(ctx, "app", metav1.GetOptions{})
	if err != nil || strings.Join(ephemeralNames(got), ",") != "dbg" || got.Spec.EphemeralContainers[0].Image != "busybox:1.36" {
		t.Fatalf("after the refusals: %v %v", err, ephemeralNames(got))
	}
}

// TestEphemeralContainersNeedTheirOwnGrant: RBAC checks
// pods/ephemeralcontainers, so updating pods (or the edit role, as in
// Kubernetes) is not enough to run a debugger in someone's pod, and
// nodes may not at all.
func TestEphemeralContainersNeedTheirOwnGrant(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	admin := c.client(0)
	createNamespace(t, c, "team")
	if _, err := admin.CoreV1().Pods("team").Create(ctx, testPod("app"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*rbacv1.Role{
		{ObjectMeta: metav1.ObjectMeta{Name: "pod-writer"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "update", "patch"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "debugger"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "update", "patch"}, APIGroups: []string{""}, Resources: []string{"pods/ephemeralcontainers"}}}},
	} {
		if _, err := admin.RbacV1().Roles("team").Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(name string, ref rbacv1.RoleRef, user string) {
		t.Helper()
		_, err := admin.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: ref, Subjects: userSubjects(user)}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("bob-pods", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-writer"}, "bob")
	bind("erin-edit", clusterRoleRef("edit"), "erin")
	bind("dana-debug", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "debugger"}, "dana")

	patch := []byte(`{"spec":{"ephemeralContainers":[{"name":"dbg","image":"busybox:1.36"}]}}`)
	debugAs := func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Pods("team").Patch(ctx, "app", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers")
		return err
	}
	bob := c.userClient(1, "bob")
	eventually(t, "bob may patch pods once bound", func() error {
		_, err := bob.CoreV1().Pods("team").Patch(ctx, "app", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"seen":"bob"}}}`), metav1.PatchOptions{})
		return err
	})
	wantForbidden(t, "bob patching pods/ephemeralcontainers", debugAs(bob), `User "bob" cannot patch resource "pods/ephemeralcontainers" in API group "" in the namespace "team"`)
	cur, err := admin.CoreV1().Pods("team").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox:1.36"}}}
	_, err = bob.CoreV1().Pods("team").UpdateEphemeralContainers(ctx, "app", cur, metav1.UpdateOptions{})
	wantForbidden(t, "bob updating pods/ephemeralcontainers", err, `cannot update resource "pods/ephemeralcontainers"`)

	erin := c.userClient(2, "erin")
	eventually(t, "erin lists pods once bound to edit", func() error {
		_, err := erin.CoreV1().Pods("team").List(ctx, metav1.ListOptions{})
		return err
	})
	wantForbidden(t, "edit patching pods/ephemeralcontainers", debugAs(erin), `cannot patch resource "pods/ephemeralcontainers"`)

	node := c.userClient(0, "system:node:n1", "system:nodes")
	wantForbidden(t, "a node patching pods/ephemeralcontainers", debugAs(node), "nodes may not use pods/ephemeralcontainers")

	dana := c.userClient(1, "dana")
	eventually(t, "dana adds an ephemeral container once bound to debugger", func() error { return debugAs(dana) })
	got, err := admin.CoreV1().Pods("team").Get(ctx, "app", metav1.GetOptions{})
	if err != nil || strings.Join(ephemeralNames(got), ",") != "dbg" {
		t.Fatalf("after dana's patch: %v %v", err, ephemeralNames(got))
	}
	_, err = dana.CoreV1().Pods("team").Patch(ctx, "app", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"seen":"dana"}}}`), metav1.PatchOptions{})
	wantForbidden(t, "dana patching the pod itself", err, `cannot patch resource "pods"`)
}
