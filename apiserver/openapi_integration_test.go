package apiserver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/resource"
	discoveryclient "k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/openapi3"
	"k8s.io/kubectl/pkg/cmd/apply"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
)

// TestKubectlReadsOpenAPI runs the code kubectl runs against the server's
// OpenAPI documents: the field validation check of `kubectl apply`, the
// patch computation, `kubectl explain`, and the v2 fallback.
func TestKubectlReadsOpenAPI(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := ctxT(t)
	cfg := c.restConfig(1, "admin", "system:masters")
	dc := discoveryclient.NewDiscoveryClientForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	v3 := cached.NewClient(dc.OpenAPIV3())
	served := []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Version: "v1", Kind: "Service"},
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	}

	t.Run("V3IndexListsGroupVersions", func(t *testing.T) {
		gvs, err := openapi3.NewRoot(v3).GroupVersions()
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(gvs)
		for _, want := range []string{"/v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1"} {
			if !strings.Contains(got, want) {
				t.Errorf("group-versions %s lack %s", got, want)
			}
		}
	})

	t.Run("ApplyLeavesValidationToServer", func(t *testing.T) {
		verifier := resource.NewQueryParamVerifierV3(dyn, v3, resource.QueryParamFieldValidation)
		for _, gvk := range served {
			if err := verifier.HasSupport(gvk); err != nil {
				t.Errorf("%v: %v", gvk, err)
			}
		}
	})

	t.Run("V2FallbackFindsKindsAndPatchTypes", func(t *testing.T) {
		verifier := resource.NewQueryParamVerifier(dyn, dc, resource.QueryParamFieldValidation)
		doc, err := dc.OpenAPISchema()
		if err != nil {
			t.Fatal(err)
		}
		resources, err := kubectlopenapi.NewOpenAPIData(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, gvk := range served {
			if err := verifier.HasSupport(gvk); err != nil {
				t.Errorf("%v: %v", gvk, err)
			}
			if resources.LookupResource(gvk) == nil {
				t.Errorf("%v: not in the v2 document", gvk)
			}
		}
	})

	t.Run("ExplainPodContainers", func(t *testing.T) {
		var out bytes.Buffer
		pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
		if err := explainv2.PrintModelDescription([]string{"spec", "containers"}, &out, v3, pods, false, 0, "plaintext"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"KIND:       Pod", "FIELD: containers <[]Container>", "DESCRIPTION:", "image\t<string>", "-required-"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("explain output lacks %q:\n%s", want, out.String())
			}
		}
	})

	t.Run("EveryReplicaServesTheSameDocuments", func(t *testing.T) {
		a, err := dc.RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := discoveryclient.NewDiscoveryClientForConfigOrDie(c.restConfig(2, "admin", "system:masters")).RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("replicas publish different hashes")
		}
	})

	t.Run("KubectlApply", func(t *testing.T) {
		if _, err := c.client(0).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kubeconfig := filepath.Join(c.dir, "admin-1.kubeconfig") // written by restConfig above
		cacheDir := t.TempDir()
		run := func(t *testing.T, manifest string) (string, string, error) {
			t.Helper()
			file := filepath.Join(t.TempDir(), "app.yaml")
			if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			return kubectlApply(t, kubeconfig, cacheDir, file)
		}

		out, errOut, err := run(t, shopManifest("web:1", "blue", ""))
		if err != nil {
			t.Fatalf("create: %v\n%s%s", err, out, errOut)
		}
		for _, want := range []string{"deployment.apps/web created", "service/web created", "configmap/web created"} {
			if !strings.Contains(out, want) {
				t.Errorf("create: output lacks %q:\n%s", want, out)
			}
		}

		// Another client adds a container; re-applying a changed image
		// must merge by container name and keep it.
		deployments := c.client(0).AppsV1().Deployments("shop")
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar:1"})
		if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		out, errOut, err = run(t, shopManifest("web:2", "green", ""))
		if err != nil {
			t.Fatalf("re-apply: %v\n%s%s", err, out, errOut)
		}
		for _, want := range []string{"deployment.apps/web configured", "service/web unchanged", "configmap/web configured"} {
			if !strings.Contains(out, want) {
				t.Errorf("re-apply: output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(errOut, "warning") {
			t.Errorf("re-apply warned: %s", errOut)
		}
		d, err = deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cs := d.Spec.Template.Spec.Containers; len(cs) != 2 || cs[0].Image != "web:2" || cs[1].Name != "sidecar" {
			t.Fatalf("containers after re-apply: %+v", cs)
		}
		cm, err := c.client(0).CoreV1().ConfigMaps("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || cm.Data["color"] != "green" {
			t.Fatalf("configmap after re-apply: %v %v", cm.Data, err)
		}

		// An unknown field is refused by the server (kubectl sent
		// fieldValidation=Strict), not by a client-side schema check.
		_, errOut, err = run(t, shopManifest("web:2", "green", "  bogusField: 1\n"))
		if err == nil {
			t.Fatal("apply of an unknown field succeeded")
		}
		if msg := err.Error() + errOut; !strings.Contains(msg, `unknown field "spec.bogusField"`) || strings.Contains(msg, "error validating data") {
			t.Fatalf("unknown field: %v %s", err, errOut)
		}
	})
}

// kubectlApply runs `kubectl apply -f file` in process, as the embedded
// kubectl does, but returns its error instead of exiting.
func kubectlApply(t *testing.T, kubeconfig, cacheDir, file string) (stdout, stderr string, err error) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &kubeconfig
	flags.CacheDir = &cacheDir
	f := cmdutil.NewFactory(flags)
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	applyFlags := apply.NewApplyFlags(streams)
	cmd := &cobra.Command{Use: "apply"}
	applyFlags.AddFlags(cmd)
	if err := cmd.Flags().Parse([]string{"-f", file}); err != nil {
		t.Fatal(err)
	}
	o, err := applyFlags.ToOptions(f, cmd, "kubectl", nil)
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run()
	}
	return out.String(), errOut.String(), err
}

// shopManifest is a Deployment, a Service and a ConfigMap; extraSpec is
// added to the Deployment's spec.
func shopManifest(image, color, extraSpec string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
` + extraSpec + `  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ` + image + `
        ports:
        - containerPort: 8080
        resources:
          limits: {cpu: 500m, memory: 128Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: shop
data:
  color: ` + color + `
`
}
