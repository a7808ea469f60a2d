package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cairn/apiserver/registry"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// entryOf returns obj's managedFields entry of manager, nil when there is
// none.
func entryOf(m metav1.Object, manager string) *metav1.ManagedFieldsEntry {
	for i, e := range m.GetManagedFields() {
		if e.Manager == manager {
			return &m.GetManagedFields()[i]
		}
	}
	return nil
}

// owns reports whether manager's entry names the field, given in the
// FieldsV1 form ("f:data", "f:k1").
func owns(m metav1.Object, manager string, fields ...string) bool {
	e := entryOf(m, manager)
	if e == nil || e.FieldsV1 == nil {
		return false
	}
	var tree map[string]any
	if err := json.Unmarshal(e.FieldsV1.Raw, &tree); err != nil {
		return false
	}
	for _, f := range fields {
		next, ok := tree[f].(map[string]any)
		if !ok {
			return false
		}
		tree = next
	}
	return true
}

func applyConfigMap(name string, data map[string]string) *corev1apply.ConfigMapApplyConfiguration {
	return corev1apply.ConfigMap(name, "team").WithData(data)
}

func testDeploymentApply(name string, replicas int32) *appsv1apply.DeploymentApplyConfiguration {
	labels := map[string]string{"app": name}
	return appsv1apply.Deployment(name, "team").WithSpec(appsv1apply.DeploymentSpec().
		WithReplicas(replicas).
		WithSelector(metav1apply.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1apply.PodTemplateSpec().WithLabels(labels).WithSpec(corev1apply.PodSpec().
			WithContainers(corev1apply.Container().WithName("web").WithImage("web:1")))))
}

// rawApply sends an apply patch as is and returns the status code and the
// error, for what the typed clients cannot send.
func rawApply(ctx context.Context, cs kubernetes.Interface, resource, name, query, body string) (int, error) {
	req := cs.CoreV1().RESTClient().Patch(types.ApplyPatchType).Namespace("team").Resource(resource).Name(name).Body([]byte(body))
	for _, kv := range strings.Split(query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			req = req.Param(k, v)
		}
	}
	var code int
	err := req.Do(ctx).StatusCode(&code).Error()
	return code, err
}

func TestServerSideApply(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	cs := c.client(0)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("team")

	t.Run("ApplyCreatesTheObject", func(t *testing.T) {
		code, err := rawApply(ctx, cs, "configmaps", "created", "fieldManager=a",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"created"},"data":{"k":"v"}}`)
		if err != nil || code != http.StatusCreated {
			t.Fatalf("apply-create: %d %v, want 201", code, err)
		}
		cm, err := cms.Get(ctx, "created", metav1.GetOptions{})
		if err != nil || cm.Data["k"] != "v" || cm.UID == "" {
			t.Fatalf("after apply-create: %+v %v", cm, err)
		}
		e := entryOf(cm, "a")
		if e == nil || e.Operation != metav1.ManagedFieldsOperationApply || e.APIVersion != "v1" || !owns(cm, "a", "f:data", "f:k") {
			t.Fatalf("managedFields after apply-create: %+v", cm.ManagedFields)
		}
	})

	var first *corev1.ConfigMap
	t.Run("ApplyUpdatesTheObject", func(t *testing.T) {
		var err error
		first, err = cms.Apply(ctx, applyConfigMap("cm", map[string]string{"k1": "v1", "k2": "v2"}), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatal(err)
		}
		second, err := cms.Apply(ctx, applyConfigMap("cm", map[string]string{"k1": "v1b", "k2": "v2"}), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if second.Data["k1"] != "v1b" || second.UID != first.UID || second.ResourceVersion == first.ResourceVersion {
			t.Fatalf("apply-update: %+v after %+v", second.ObjectMeta, first.ObjectMeta)
		}
		if len(second.ManagedFields) != 1 || !owns(second, "a", "f:data", "f:k1") || !owns(second, "a", "f:data", "f:k2") {
			t.Fatalf("managedFields: %+v", second.ManagedFields)
		}
	})

	t.Run("AFieldLeftOutOfTheConfigIsRemoved", func(t *testing.T) {
		cm, err := cms.Apply(ctx, applyConfigMap("cm", map[string]string{"k1": "v1b"}), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cm.Data["k2"]; ok || owns(cm, "a", "f:data", "f:k2") {
			t.Fatalf("k2 still there after a leaves it out: %v %+v", cm.Data, cm.ManagedFields)
		}
	})

	t.Run("TwoManagersConflict", func(t *testing.T) {
		_, err := cms.Apply(ctx, applyConfigMap("cm", map[string]string{"k1": "theirs"}), metav1.ApplyOptions{FieldManager: "b"})
		if !apierrors.IsConflict(err) {
			t.Fatalf("b applying a's field: %v, want 409", err)
		}
		st := err.(apierrors.APIStatus).Status()
		if st.Details == nil || len(st.Details.Causes) != 1 {
			t.Fatalf("conflict causes: %+v", st.Details)
		}
		cause := st.Details.Causes[0]
		if cause.Type != metav1.CauseTypeFieldManagerConflict || cause.Field != ".data.k1" || !strings.Contains(cause.Message, `"a"`) {
			t.Fatalf("conflict cause: %+v", cause)
		}
		if cm, _ := cms.Get(ctx, "cm", metav1.GetOptions{}); cm.Data["k1"] != "v1b" {
			t.Fatalf("a refused apply changed the object: %v", cm.Data)
		}
		// The same value is no conflict: both managers then own it.
		cm, err := cms.Apply(ctx, applyConfigMap("cm", map[string]string{"k1": "v1b"}), metav1.ApplyOptions{FieldManager: "b"})
		if err != nil || !owns(cm, "a", "f:data", "f:k1") || !owns(cm, "b", "f:data", "f:k1") {
			t.Fatalf("agreeing apply: %v %+v", err, cm)
		}
	})

	t.Run("ForceTakesOwnership", func(t *testing.T) {
		cm, err := cms.Apply(ctx, applyConfigMap("cm", map[string]string{"k1": "forced"}), metav1.ApplyOptions{FieldManager: "c", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["k1"] != "forced" || !owns(cm, "c", "f:data", "f:k1") || owns(cm, "a", "f:data", "f:k1") || owns(cm, "b", "f:data", "f:k1") {
			t.Fatalf("after a forced apply: %v %+v", cm.Data, cm.ManagedFields)
		}
	})

	t.Run("StaleResourceVersionConflicts", func(t *testing.T) {
		cfg := applyConfigMap("cm", map[string]string{"k1": "forced"}).WithResourceVersion(first.ResourceVersion)
		if _, err := cms.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "c"}); !apierrors.IsConflict(err) {
			t.Fatalf("apply with a stale resourceVersion: %v, want 409", err)
		}
	})

	t.Run("UpdatesAreRecordedUnderTheirManager", func(t *testing.T) {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"x": "1"}},
			metav1.CreateOptions{FieldManager: "creator"})
		if err != nil {
			t.Fatal(err)
		}
		if e := entryOf(cm, "creator"); e == nil || e.Operation != metav1.ManagedFieldsOperationUpdate || e.Time == nil || !owns(cm, "creator", "f:data", "f:x") {
			t.Fatalf("managedFields after create: %+v", cm.ManagedFields)
		}
		rc := c.restConfig(0, "admin", "system:masters")
		rc.UserAgent = "my-controller/v1.2.3 (linux/amd64) kubernetes/abcdef"
		mine := kubernetes.NewForConfigOrDie(rc).CoreV1().ConfigMaps("team")
		cm.Data["y"] = "2"
		cm, err = mine.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if e := entryOf(cm, "my-controller"); e == nil || e.Operation != metav1.ManagedFieldsOperationUpdate ||
			!owns(cm, "my-controller", "f:data", "f:y") || owns(cm, "my-controller", "f:data", "f:x") || !owns(cm, "creator", "f:data", "f:x") {
			t.Fatalf("managedFields after an update named by its User-Agent: %+v", cm.ManagedFields)
		}
		cm, err = mine.Patch(ctx, "plain", types.MergePatchType, []byte(`{"data":{"z":"3"}}`), metav1.PatchOptions{FieldManager: "patcher"})
		if err != nil || !owns(cm, "patcher", "f:data", "f:z") {
			t.Fatalf("managedFields after a merge patch: %v %+v", err, cm)
		}
		got, err := cs.CoreV1().ConfigMaps("team").Get(ctx, "plain", metav1.GetOptions{})
		if err != nil || len(got.ManagedFields) != 3 {
			t.Fatalf("get returns the stored managedFields: %v %+v", err, got)
		}
		if err := managedfields.ValidateManagedFields(got.ManagedFields); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ClientsMayClearManagedFields", func(t *testing.T) {
		for i, clear := range []string{`[]`, `[{}]`} {
			cm, err := cms.Patch(ctx, "plain", types.MergePatchType, []byte(`{"metadata":{"managedFields":`+clear+`}}`), metav1.PatchOptions{})
			if err != nil || len(cm.ManagedFields) != 0 {
				t.Fatalf("after clearing managedFields with %s: %v %+v", clear, err, cm.ManagedFields)
			}
			if i == 0 {
				// Give the next clear something to clear.
				if _, err := cms.Apply(ctx, applyConfigMap("plain", map[string]string{"x": "1"}), metav1.ApplyOptions{FieldManager: "a", Force: true}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// As in Kubernetes, updates alone do not start tracking again on
		// an object that had some: the next apply does.
		cm, err := cms.Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["w"] = "4"
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "updater"})
		if err != nil || len(cm.ManagedFields) != 0 {
			t.Fatalf("an update after clearing: %v %+v", err, cm.ManagedFields)
		}
		cm, err = cms.Apply(ctx, applyConfigMap("plain", map[string]string{"x": "1"}), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil || !owns(cm, "a", "f:data", "f:x") || !owns(cm, "before-first-apply", "f:data", "f:w") {
			t.Fatalf("the first apply after clearing: %v %+v", err, cm.ManagedFields)
		}
	})

	t.Run("StatusIsAppliedThroughTheStatusSubresourceOnly", func(t *testing.T) {
		deploys := cs.AppsV1().Deployments("team")
		withStatus := testDeploymentApply("web", 2).WithStatus(appsv1apply.DeploymentStatus().WithReplicas(7))
		d, err := deploys.Apply(ctx, withStatus, metav1.ApplyOptions{FieldManager: "deployer"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.Replicas != 0 || owns(d, "deployer", "f:status") || !owns(d, "deployer", "f:spec", "f:replicas") || d.Generation != 1 {
			t.Fatalf("status through the main resource: %+v %+v", d.Status, d.ManagedFields)
		}
		status := appsv1apply.Deployment("web", "team").WithStatus(appsv1apply.DeploymentStatus().WithReplicas(2).WithObservedGeneration(1))
		d, err = deploys.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "controller"})
		if err != nil {
			t.Fatal(err)
		}
		e := entryOf(d, "controller")
		if d.Status.Replicas != 2 || e == nil || e.Subresource != "status" || !owns(d, "controller", "f:status", "f:replicas") || owns(d, "controller", "f:spec") {
			t.Fatalf("after a status apply: %+v %+v", d.Status, d.ManagedFields)
		}
		d, err = deploys.Apply(ctx, testDeploymentApply("web", 3), metav1.ApplyOptions{FieldManager: "deployer"})
		if err != nil || *d.Spec.Replicas != 3 || d.Generation != 2 || d.Status.Replicas != 2 {
			t.Fatalf("spec apply after a status apply: %v %+v", err, d)
		}
		specOnStatus := appsv1apply.Deployment("web", "team").WithSpec(appsv1apply.DeploymentSpec().WithReplicas(9))
		d, err = deploys.ApplyStatus(ctx, specOnStatus, metav1.ApplyOptions{FieldManager: "controller", Force: true})
		if err != nil || *d.Spec.Replicas != 3 || owns(d, "controller", "f:spec") {
			t.Fatalf("spec through the status subresource: %v %+v", err, d)
		}
	})

	t.Run("DryRunStoresNothing", func(t *testing.T) {
		cm, err := cms.Apply(ctx, applyConfigMap("dry", map[string]string{"k": "v"}), metav1.ApplyOptions{FieldManager: "a", DryRun: []string{metav1.DryRunAll}})
		if err != nil || cm.Data["k"] != "v" {
			t.Fatalf("dry-run apply-create: %v %+v", err, cm)
		}
		if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after a dry-run apply-create: %v, want NotFound", err)
		}
		before, _ := cms.Get(ctx, "cm", metav1.GetOptions{})
		cm, err = cms.Apply(ctx, applyConfigMap("cm", map[string]string{"k1": "dry"}), metav1.ApplyOptions{FieldManager: "c", DryRun: []string{metav1.DryRunAll}})
		if err != nil || cm.Data["k1"] != "dry" {
			t.Fatalf("dry-run apply: %v %+v", err, cm)
		}
		if after, _ := cms.Get(ctx, "cm", metav1.GetOptions{}); after.ResourceVersion != before.ResourceVersion || after.Data["k1"] != before.Data["k1"] {
			t.Fatalf("a dry-run apply changed the object: %v -> %v", before.Data, after.Data)
		}
	})

	t.Run("ApplyCreateAllocatesAServiceIP", func(t *testing.T) {
		svc := corev1apply.Service("svc", "team").WithSpec(corev1apply.ServiceSpec().
			WithSelector(map[string]string{"app": "web"}).WithPorts(corev1apply.ServicePort().WithPort(80)))
		s, err := cs.CoreV1().Services("team").Apply(ctx, svc, metav1.ApplyOptions{FieldManager: "a"})
		if err != nil || s.Spec.ClusterIP == "" || owns(s, "a", "f:spec", "f:clusterIP") {
			t.Fatalf("apply-created service: %v %+v", err, s)
		}
	})

	t.Run("BadRequestsStoreNothing", func(t *testing.T) {
		valid := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"data":{"k":"v"}}`
		for _, tc := range []struct {
			name, query, body string
			code              int
			message           string
		}{
			{"NoFieldManager", "", valid, http.StatusUnprocessableEntity, "fieldManager: Required value"},
			{"UnprintableFieldManager", "fieldManager=a\x07", valid, http.StatusUnprocessableEntity, "must be printable"},
			{"NotYAML", "fieldManager=a", "data: [unclosed", http.StatusBadRequest, "error decoding YAML"},
			{"NotAnObject", "fieldManager=a", "- 1\n- 2\n", http.StatusBadRequest, "must be an object"},
			{"Empty", "fieldManager=a", "", http.StatusBadRequest, "empty"},
			{"WrongKind", "fieldManager=a", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad"}}`, http.StatusBadRequest, "not a \"ConfigMap\""},
			{"UnknownField", "fieldManager=a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"bogus":1}`, http.StatusBadRequest, "bogus"},
			{"WrongFieldType", "fieldManager=a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"data":["x"]}`, http.StatusBadRequest, ".data"},
			{"ManagedFieldsSet", "fieldManager=a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","managedFields":[]}}`, http.StatusBadRequest, "managedFields must be nil"},
			{"DuplicateFieldWhenStrict", "fieldManager=a&fieldValidation=Strict", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {k: a, k: b}\n", http.StatusBadRequest, "already set"},
			{"NameMismatch", "fieldManager=a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`, http.StatusBadRequest, "does not match"},
			{"BadForce", "fieldManager=a&force=maybe", valid, http.StatusBadRequest, "force"},
			{"Invalid", "fieldManager=a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","labels":{"-":"x"}}}`, http.StatusUnprocessableEntity, "labels"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, err := rawApply(ctx, cs, "configmaps", "bad", tc.query, tc.body)
				if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("got %d %v, want %d mentioning %q", code, err, tc.code, tc.message)
				}
				if _, err := cms.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("a refused apply stored something: %v", err)
				}
			})
		}
	})

	t.Run("ForceOnlyOnApply", func(t *testing.T) {
		err := cs.CoreV1().RESTClient().Patch(types.MergePatchType).Namespace("team").Resource("configmaps").Name("cm").
			Param("force", "true").Body([]byte(`{}`)).Do(ctx).Error()
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not be specified for non-apply patch") {
			t.Fatalf("force on a merge patch: %v, want 422", err)
		}
	})

	t.Run("ScaleIsNotApplied", func(t *testing.T) {
		err := cs.AppsV1().RESTClient().Patch(types.ApplyPatchType).Namespace("team").Resource("deployments").Name("web").
			SubResource("scale").Param("fieldManager", "a").Body([]byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":1}}`)).Do(ctx).Error()
		if code := apiCode(err); code != http.StatusUnsupportedMediaType {
			t.Fatalf("apply to scale: %v, want 415", err)
		}
	})
}

func TestManagerName(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		name, query, userAgent, want string
	}{
		{"QueryParameterWins", "fieldManager=kubectl-client-side-apply", "kubectl/v1.33.0 (linux/amd64) kubernetes/abc", "kubectl-client-side-apply"},
		{"UserAgentUpToTheFirstSlash", "", "kubectl/v1.33.0 (linux/amd64) kubernetes/abc", "kubectl"},
		{"ClientGoBinaryName", "", "kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:deployment-controller", "kube-controller-manager"},
		{"UnprintableDropped", "", "my\x07agent/1", "myagent"},
		{"TrimmedToTheLimit", "", long + "/1", long[:maxFieldManagerLength]},
		{"NoUserAgent", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/a/configmaps?"+tc.query, nil)
			r.Header.Set("User-Agent", tc.userAgent)
			if got := managerName(r); got != tc.want {
				t.Fatalf("managerName = %q, want %q", got, tc.want)
			}
		})
	}
}

// benchPodJSON is the pod the API benchmark creates: labels, an
// annotation, one container with a port, an env var, resources and a probe.
const benchPodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"app":"apibench","tier":"backend","run":"r1"},` +
	`"annotations":{"apibench.cairn.io/purpose":"API server benchmark"}},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10",` +
	`"ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"env":[{"name":"MODE","value":"bench"}],` +
	`"resources":{"requests":{"cpu":"10m","memory":"16Mi"},"limits":{"memory":"32Mi"}},` +
	`"readinessProbe":{"tcpSocket":{"port":"http"},"periodSeconds":10}}]}}`

// BenchmarkCreatePod measures pod creates through the whole handler over
// a 1-replica store, many at once as the API benchmark sends them. Besides
// the time per create it reports the process's CPU time per create
// (cpu-ns/op), which other load on the machine disturbs less.
func BenchmarkCreatePod(b *testing.B) {
	api := newFuzzAPI(b)
	var n atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Sprintf(benchPodJSON, fmt.Sprintf("p%d", n.Add(1)))
			if code, out := api.do(b, http.MethodPost, "/api/v1/namespaces/fuzz/pods", mediaJSON, []byte(body)); code != http.StatusCreated {
				b.Fatalf("create: %d %s", code, out)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the user and system CPU time the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTrackCreate measures what field tracking adds to a pod
// create, computed and from the cache.
func BenchmarkTrackCreate(b *testing.B) {
	pod := benchPod(b)
	r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/fuzz/pods?fieldManager=bench", nil)
	for _, tc := range []struct {
		name  string
		cache *createFieldsCache
	}{{"Computed", nil}, {"Cached", newCreateFieldsCache()}} {
		b.Run(tc.name, func(b *testing.B) {
			h := &restHandler{s: &Server{log: quietLogger()}, res: podResource(b), createFields: tc.cache}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p := pod.DeepCopy()
				p.Name = fmt.Sprintf("p%d", i)
				if out := h.trackCreate(r, "", p); len(out.(*corev1.Pod).ManagedFields) != 1 {
					b.Fatal("no managedFields")
				}
			}
		})
	}
}

// benchPod is benchPodJSON decoded and defaulted, as a create tracks it.
func benchPod(tb testing.TB) *corev1.Pod {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(fmt.Appendf(nil, benchPodJSON, "p"), pod); err != nil {
		tb.Fatal(err)
	}
	podResource(tb).Strategy.Default(pod)
	return pod
}

func TestCreateFieldsCacheReplaysTheFieldManager(t *testing.T) {
	many := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "many", Labels: map[string]string{}}, Data: map[string]string{}}
	for i := range 30 {
		many.Data[fmt.Sprintf("k%d", i)] = "v"
		many.Labels[fmt.Sprintf("l%d", i)] = "v"
	}
	relabelled := benchPod(t)
	relabelled.Labels["extra"] = "x"
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", GenerateName: "d-"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}}}
	for _, tc := range []struct {
		name, resource, sub string
		obj                 runtime.Object
	}{
		{"Pod", "pods", "", benchPod(t)},
		{"PodWithAnotherLabel", "pods", "", relabelled},
		{"ManyMapKeys", "configmaps", "", many},
		{"Empty", "configmaps", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}},
		{"Deployment", "deployments", "", deploy},
		{"DeploymentStatus", "deployments", "status", deploy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := resourceNamed(t, tc.resource)
			r := httptest.NewRequest(http.MethodPost, "/x?fieldManager=m", nil)
			uncached := &restHandler{s: &Server{log: quietLogger()}, res: res}
			cached := &restHandler{s: &Server{log: quietLogger()}, res: res, createFields: newCreateFieldsCache()}
			want := uncached.trackCreate(r, tc.sub, tc.obj.DeepCopyObject())
			for i := range 3 {
				// Names and uids differ between creates; the entry must not.
				obj := tc.obj.DeepCopyObject()
				m, _ := metaOf(obj)
				m.SetName(fmt.Sprintf("n%d", i))
				m.SetUID(types.UID(fmt.Sprint(i)))
				got := cached.trackCreate(r, tc.sub, obj)
				if !sameEntries(t, got, want) {
					wm, _ := metaOf(want)
					gm, _ := metaOf(got)
					t.Fatalf("create %d: managedFields %+v, want %+v", i, gm.GetManagedFields(), wm.GetManagedFields())
				}
			}
			if n := cached.createFields.entries.Len(); n != 1 {
				t.Fatalf("%d cache entries for alike creates, want 1", n)
			}
		})
	}
}

func TestCreateFieldsCacheTellsObjectsApart(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/x?fieldManager=m", nil)
	uncached := &restHandler{s: &Server{log: quietLogger()}, res: podResource(t)}
	cached := &restHandler{s: &Server{log: quietLogger()}, res: podResource(t), createFields: newCreateFieldsCache()}
	relabelled := benchPod(t)
	relabelled.Labels["extra"] = "x"
	other := httptest.NewRequest(http.MethodPost, "/x?fieldManager=other", nil)
	for i, tc := range []struct {
		r   *http.Request
		pod *corev1.Pod
	}{{r, benchPod(t)}, {r, relabelled}, {other, benchPod(t)}, {r, benchPod(t)}} {
		want := uncached.trackCreate(tc.r, "", tc.pod.DeepCopy())
		if got := cached.trackCreate(tc.r, "", tc.pod.DeepCopy()); !sameEntries(t, got, want) {
			t.Fatalf("create %d: managedFields %+v, want %+v", i, got.(*corev1.Pod).ManagedFields, want.(*corev1.Pod).ManagedFields)
		}
	}
	if n := cached.createFields.entries.Len(); n != 3 {
		t.Fatalf("%d cache entries for 3 distinct creates", n)
	}
}

// sameEntries compares two objects' managedFields but for their times,
// which must be set on both or neither.
func sameEntries(t *testing.T, a, b runtime.Object) bool {
	am, _ := metaOf(a)
	bm, _ := metaOf(b)
	ae, be := am.GetManagedFields(), bm.GetManagedFields()
	if len(ae) != len(be) {
		return false
	}
	for i := range ae {
		x, y := ae[i], be[i]
		if (x.Time == nil) != (y.Time == nil) {
			return false
		}
		x.Time, y.Time = nil, nil
		if !apiequality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// resourceNamed is the registry's resource of that name.
func resourceNamed(tb testing.TB, resource string) *registry.Resource {
	for _, r := range registry.All() {
		if r.GVR.Resource == resource {
			return r
		}
	}
	tb.Fatalf("%s are not served", resource)
	return nil
}

// podResource is the registry's pods resource.
func podResource(tb testing.TB) *registry.Resource { return resourceNamed(tb, "pods") }
