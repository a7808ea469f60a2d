package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestKubectlAgainstThreeReplicaAPI runs the embedded kubectl, as a user
// would, against a 3-replica cluster whose members all serve the
// Kubernetes API. The subtests share the cluster and build on each other:
// the deployment created first is read, labelled, patched, described and
// deleted by the later ones.
func TestKubectlAgainstThreeReplicaAPI(t *testing.T) {
	t.Parallel()
	c, apis := startAPICluster(t)
	k := newKubectl(t, filepath.Join(c.members[0].dataDir, "admin.kubeconfig"))
	k.waitReady(t)

	t.Run("CreateNamespaceAndDeployment", func(t *testing.T) {
		if out := k.must(t, "create", "namespace", "shop"); !strings.Contains(out, "namespace/shop created") {
			t.Errorf("create namespace printed %q", out)
		}
		out := k.must(t, "-n", "shop", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
		if !strings.Contains(out, "deployment.apps/web created") {
			t.Errorf("create deployment printed %q", out)
		}
		// Every replica's API server sees it: they share one store.
		for i, api := range apis {
			if out := k.must(t, "--server", "https://"+api, "-n", "shop", "get", "deployments", "-o", "name"); out != "deployment.apps/web\n" {
				t.Errorf("API server of s%d lists %q, want the deployment", i+1, out)
			}
		}
	})

	t.Run("GetYAMLShowsDefaultsAndServerMetadata", func(t *testing.T) {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(k.must(t, "-n", "shop", "get", "deployment", "web", "-o", "yaml")), &d); err != nil {
			t.Fatalf("get -o yaml is not a Deployment: %v", err)
		}
		switch {
		case d.Kind != "Deployment" || d.APIVersion != "apps/v1":
			t.Errorf("kind %q apiVersion %q", d.Kind, d.APIVersion)
		case d.UID == "" || d.ResourceVersion == "" || d.CreationTimestamp.IsZero() || d.Generation != 1:
			t.Errorf("server-owned metadata missing: %+v", d.ObjectMeta)
		case d.Spec.Replicas == nil || *d.Spec.Replicas != 2:
			t.Errorf("replicas %v, want 2", d.Spec.Replicas)
		case d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.RevisionHistoryLimit == nil:
			t.Errorf("defaults not applied: strategy %+v revisionHistoryLimit %v", d.Spec.Strategy, d.Spec.RevisionHistoryLimit)
		case len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27":
			t.Errorf("containers %+v", d.Spec.Template.Spec.Containers)
		}
	})

	t.Run("GetWideShowsImagesAndSelector", func(t *testing.T) {
		out := k.must(t, "-n", "shop", "get", "deployments", "-o", "wide")
		header, row := tableRow(t, out, "web")
		for _, col := range []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"} {
			if !strings.Contains(header, col) {
				t.Errorf("-o wide header lacks %s:\n%s", col, out)
			}
		}
		if f := strings.Fields(row); len(f) != 8 || f[5] != "nginx" || f[6] != "nginx:1.27" || f[7] != "app=web" {
			t.Errorf("-o wide row %q, want the container, image and selector", row)
		}
	})

	t.Run("LabelAndAnnotateShowInGet", func(t *testing.T) {
		if out := k.must(t, "-n", "shop", "label", "deployment", "web", "tier=frontend"); !strings.Contains(out, "labeled") {
			t.Errorf("label printed %q", out)
		}
		if out := k.must(t, "-n", "shop", "annotate", "deployment", "web", "owner=team-a"); !strings.Contains(out, "annotated") {
			t.Errorf("annotate printed %q", out)
		}
		got := k.must(t, "-n", "shop", "get", "deployment", "web", "-o", `jsonpath={.metadata.labels.tier} {.metadata.annotations.owner}`)
		if got != "frontend team-a" {
			t.Errorf("label and annotation read back as %q", got)
		}
		// A label that exists already is refused without --overwrite.
		r := k.run(t, "-n", "shop", "label", "deployment", "web", "tier=backend")
		if r.code == 0 || !strings.Contains(r.stderr, "already has a value") {
			t.Errorf("relabel without --overwrite:\n%s", r)
		}
	})

	t.Run("PatchMergeJSONAndStrategic", func(t *testing.T) {
		tests := []struct {
			name, typ, patch, jsonpath, want string
		}{
			{"Merge", "merge", `{"spec":{"replicas":3}}`, `{.spec.replicas}`, "3"},
			{"JSON", "json", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]`,
				`{.spec.template.spec.containers[0].image}`, "nginx:1.28"},
			// Containers merge by name: the env is added and the image kept.
			{"Strategic", "strategic", `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"MODE","value":"fast"}]}]}}}}`,
				`{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[0].value}`, "nginx:1.28 fast"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if out := k.must(t, "-n", "shop", "patch", "deployment", "web", "--type", tt.typ, "-p", tt.patch); !strings.Contains(out, "patched") {
					t.Errorf("patch printed %q", out)
				}
				if got := k.must(t, "-n", "shop", "get", "deployment", "web", "-o", "jsonpath="+tt.jsonpath); got != tt.want {
					t.Errorf("after the %s patch: %q, want %q", tt.typ, got, tt.want)
				}
			})
		}
		r := k.run(t, "-n", "shop", "patch", "deployment", "web", "--type", "merge", "-p", `{"spec":{"replicas":-1}}`)
		if r.code == 0 || !strings.Contains(r.stderr, "spec.replicas") {
			t.Errorf("an invalid patch must be refused naming the field:\n%s", r)
		}
	})

	t.Run("DescribeConfigMapAndDeployment", func(t *testing.T) {
		k.must(t, "-n", "shop", "create", "configmap", "settings", "--from-literal=color=blue")
		out := k.must(t, "-n", "shop", "describe", "configmap", "settings")
		for _, want := range []string{"settings", "shop", "color:", "blue"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe configmap lacks %q:\n%s", want, out)
			}
		}
		out = k.must(t, "-n", "shop", "describe", "deployment", "web")
		for _, want := range []string{"Name:", "web", "tier=frontend", "owner: team-a", "3 desired", "nginx:1.28", "MODE:", "RollingUpdate"} {
			if !strings.Contains(out, want) {
				t.Errorf("describe deployment lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("GetWatchPrintsChanges", func(t *testing.T) {
		w := k.start(t, "-n", "shop", "get", "configmaps", "--watch", "--output-watch-events")
		// The current objects come first, then the changes.
		w.waitLine(t, "ADDED", "settings")
		k.must(t, "-n", "shop", "create", "configmap", "watched", "--from-literal=n=1")
		w.waitLine(t, "ADDED", "watched")
		k.must(t, "-n", "shop", "label", "configmap", "watched", "seen=yes")
		w.waitLine(t, "MODIFIED", "watched")
		k.must(t, "-n", "shop", "delete", "configmap", "watched")
		w.waitLine(t, "DELETED", "watched")
		w.stop()
	})

	t.Run("SelectorsFilterGet", func(t *testing.T) {
		k.must(t, "-n", "shop", "create", "configmap", "red")
		k.must(t, "-n", "shop", "create", "configmap", "green")
		k.must(t, "-n", "shop", "label", "configmap", "red", "color=red", "env=prod")
		k.must(t, "-n", "shop", "label", "configmap", "green", "color=green", "env=prod")
		tests := []struct {
			name string
			args []string
			want string
		}{
			{"LabelEquals", []string{"-l", "color=red"}, "configmap/red\n"},
			{"LabelSet", []string{"-l", "env=prod"}, "configmap/green\nconfigmap/red\n"},
			{"LabelNotEquals", []string{"-l", "env=prod,color!=red"}, "configmap/green\n"},
			{"FieldEquals", []string{"--field-selector", "metadata.name=settings"}, "configmap/settings\n"},
			{"LabelAndField", []string{"-l", "env=prod", "--field-selector", "metadata.name!=green"}, "configmap/red\n"},
			{"NothingMatches", []string{"-l", "color=blue"}, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				args := append([]string{"-n", "shop", "get", "configmaps", "-o", "name"}, tt.args...)
				if got := k.must(t, args...); got != tt.want {
					t.Errorf("got %q, want %q", got, tt.want)
				}
			})
		}
		r := k.run(t, "-n", "shop", "get", "configmaps", "--field-selector", "data.color=red")
		if r.code == 0 || !strings.Contains(r.stderr, "field label not supported") {
			t.Errorf("an unsupported field selector must be refused:\n%s", r)
		}
	})

	t.Run("ScaleSetsReplicas", func(t *testing.T) {
		if out := k.must(t, "-n", "shop", "scale", "deployment", "web", "--replicas=5"); !strings.Contains(out, "scaled") {
			t.Errorf("scale printed %q", out)
		}
		if got := k.must(t, "-n", "shop", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"); got != "5" {
			t.Errorf("replicas after scale: %q, want 5", got)
		}
		r := k.run(t, "-n", "shop", "scale", "deployment", "web", "--replicas=7", "--current-replicas=2")
		if r.code == 0 {
			t.Errorf("scale with a wrong --current-replicas must be refused:\n%s", r)
		}
	})

	t.Run("ExplainDescribesFields", func(t *testing.T) {
		out := k.must(t, "explain", "deployment.spec.replicas")
		for _, want := range []string{"KIND:       Deployment", "replicas <integer>", "DESCRIPTION:"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("ApplyCreatesConfiguresAndPrunesFields", func(t *testing.T) {
		// A namespace and an object in it, in one file, as users keep them.
		manifest := filepath.Join(t.TempDir(), "app.yaml")
		write := func(data string) {
			doc := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: applied\n---\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: applied\ndata:\n" + data
			if err := os.WriteFile(manifest, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("  color: blue\n  size: big\n")
		out := k.must(t, "apply", "-f", manifest)
		if !strings.Contains(out, "namespace/applied created") || !strings.Contains(out, "configmap/cfg created") {
			t.Errorf("first apply printed %q", out)
		}
		// A key removed from the file is removed from the object: the
		// three-way merge uses the last-applied annotation.
		write("  color: red\n")
		out = k.must(t, "apply", "-f", manifest)
		if !strings.Contains(out, "namespace/applied unchanged") || !strings.Contains(out, "configmap/cfg configured") {
			t.Errorf("second apply printed %q", out)
		}
		if got := k.must(t, "-n", "applied", "get", "configmap", "cfg", "-o", "jsonpath={.data}"); got != `{"color":"red"}` {
			t.Errorf("data after the second apply: %s", got)
		}
	})

	t.Run("DeleteRemovesDeployment", func(t *testing.T) {
		if out := k.must(t, "-n", "shop", "delete", "deployment", "web"); !strings.Contains(out, `"web" deleted`) {
			t.Errorf("delete printed %q", out)
		}
		r := k.run(t, "-n", "shop", "get", "deployment", "web")
		if r.code == 0 || !strings.Contains(r.stderr, "NotFound") {
			t.Errorf("get after delete:\n%s", r)
		}
	})

	t.Run("APIResourcesListsServedTypes", func(t *testing.T) {
		out := k.must(t, "api-resources")
		for _, want := range [][]string{
			{"pods", "po", "v1", "true", "Pod"},
			{"namespaces", "ns", "v1", "false", "Namespace"},
			{"deployments", "deploy", "apps/v1", "true", "Deployment"},
			{"leases", "coordination.k8s.io/v1", "true", "Lease"},
		} {
			if _, row := tableRow(t, out, want[0]); strings.Join(strings.Fields(row), " ") != strings.Join(want, " ") {
				t.Errorf("api-resources row %q, want %q", row, strings.Join(want, " "))
			}
		}
	})

	t.Run("VersionShowsServerVersion", func(t *testing.T) {
		r := k.run(t, "version", "-o", "json")
		var v struct {
			ClientVersion, ServerVersion struct{ Major, Minor, GitVersion string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("version -o json is not JSON: %v\n%s", err, r)
		}
		if v.ServerVersion.Major != "1" || !strings.HasPrefix(v.ServerVersion.GitVersion, "v1.") || !strings.Contains(v.ServerVersion.GitVersion, "cairn") {
			t.Errorf("server version %+v", v.ServerVersion)
		}
		// kubectl checks the version skew, so its own version must parse.
		if !strings.HasPrefix(v.ClientVersion.GitVersion, "v1.") {
			t.Errorf("client version %+v: the embedded kubectl was built without its version", v.ClientVersion)
		}
		if r.code != 0 {
			t.Errorf("kubectl version must exit 0:\n%s", r)
		}
	})

	t.Run("CreateTokenIdentifiesTheServiceAccount", func(t *testing.T) {
		k.must(t, "-n", "shop", "create", "serviceaccount", "robot")
		token := strings.TrimSpace(k.must(t, "-n", "shop", "create", "token", "robot", "--duration", "20m"))
		// As the README shows it: the token alone, without the admin
		// certificate of the kubeconfig, on another replica.
		who := k.must(t, "--kubeconfig", os.DevNull, "--server", "https://"+apis[2],
			"--certificate-authority", filepath.Join(c.pki, "ca.crt"), "--token", token,
			"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if who != "system:serviceaccount:shop:robot" {
			t.Errorf("auth whoami with the token printed %q", who)
		}
		r := k.run(t, "--kubeconfig", os.DevNull, "--server", "https://"+apis[2],
			"--certificate-authority", filepath.Join(c.pki, "ca.crt"), "--token", token, "-n", "shop", "get", "pods")
		if r.code == 0 || !strings.Contains(r.stderr, `cannot list resource "pods"`) {
			t.Errorf("the token without a role listed pods:\n%s", r)
		}

		// A long-lived token in a Secret, as the README shows it.
		manifest := filepath.Join(t.TempDir(), "robot-token.yaml")
		if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Secret
metadata:
  name: robot-token
  namespace: shop
  annotations:
    kubernetes.io/service-account.name: robot
type: kubernetes.io/service-account-token
`), 0o600); err != nil {
			t.Fatal(err)
		}
		k.must(t, "apply", "-f", manifest)
		encoded := k.must(t, "-n", "shop", "get", "secret", "robot-token", "-o", "jsonpath={.data.token}")
		secretToken, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
		if err != nil || len(secretToken) == 0 {
			t.Fatalf("the Secret's token %q: %v", encoded, err)
		}
		who = k.must(t, "--kubeconfig", os.DevNull, "--server", "https://"+apis[1],
			"--certificate-authority", filepath.Join(c.pki, "ca.crt"), "--token", string(secretToken),
			"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if who != "system:serviceaccount:shop:robot" {
			t.Errorf("auth whoami with the Secret's token printed %q", who)
		}
	})
}

// startAPICluster bootstraps three members that also serve the Kubernetes
// API, and returns the API addresses.
func startAPICluster(t *testing.T) (*cluster, []string) {
	t.Helper()
	c := newCluster(t, pkiInit(t), "kubectl", "s1", "s2", "s3")
	apis := freePorts(t, len(c.members))
	for i, m := range c.members {
		m.start(t, []string{
			"server", "--name", m.name, "--data-dir", m.dataDir, "--pki-dir", c.pki,
			"--peer-listen", m.peer, "--store-listen", m.store, "--metrics-listen", m.metrics,
			"--api-listen", apis[i], "--disable", "scheduler,controllers",
			"--initial-cluster", c.initialCluster(), "--initial-cluster-token", c.token,
		})
	}
	for _, m := range c.members {
		m.waitHealthy(t)
	}
	return c, apis
}

// kubectl runs `cairn kubectl` with a kubeconfig and a home dir of its
// own, so its discovery cache is the test's.
type kubectl struct {
	env []string
}

func newKubectl(t *testing.T, kubeconfig string) kubectl {
	return kubectl{env: append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())}
}

// waitReady waits until the API answers and the system namespaces exist.
func (k kubectl) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := k.run(t, "get", "namespace", "default", "-o", "name")
		if r.code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API did not serve namespace default within 30s:\n%s", r)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// run runs kubectl to completion, failing the test when it hangs.
func (k kubectl) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	all := append([]string{"kubectl"}, args...)
	cmd := exec.CommandContext(ctx, cairnBin(t), all...)
	cmd.Env = k.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	r := result{args: all, stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("still running after %s, killed:\n%s", commandTimeout, r)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running cairn %s: %v", strings.Join(all, " "), err)
	}
	return r
}

// must runs kubectl, fails the test unless it exits 0, and returns stdout.
func (k kubectl) must(t *testing.T, args ...string) string {
	t.Helper()
	r := k.run(t, args...)
	if r.code != 0 {
		t.Fatalf("want exit code 0:\n%s", r)
	}
	return r.stdout
}

// watchProc is a long-running kubectl, such as `get --watch`, whose
// output is read line by line.
type watchProc struct {
	cmd   *exec.Cmd
	lines chan string
	seen  []string
}

// start launches kubectl in the background; it is killed when t ends.
func (k kubectl) start(t *testing.T, args ...string) *watchProc {
	t.Helper()
	cmd := exec.Command(cairnBin(t), append([]string{"kubectl"}, args...)...)
	cmd.Env = k.env
	cmd.SysProcAttr = childProcAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watchProc{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			w.lines <- s.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(w.stop)
	return w
}

// waitLine waits for a line holding every one of words.
func (w *watchProc) waitLine(t *testing.T, words ...string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("kubectl ended before printing a line with %q; it printed:\n%s", words, strings.Join(w.seen, "\n"))
			}
			w.seen = append(w.seen, line)
			if hasAll(strings.Fields(line), words) {
				return
			}
		case <-timeout:
			t.Fatalf("no line with %q within 15s; kubectl printed:\n%s", words, strings.Join(w.seen, "\n"))
		}
	}
}

// stop ends the process as Ctrl-C would.
func (w *watchProc) stop() {
	if w.cmd.ProcessState != nil {
		return
	}
	w.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() {
		for range w.lines {
		}
		w.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w.cmd.Process.Kill()
		<-done
	}
}

func hasAll(fields, words []string) bool {
	for _, word := range words {
		found := false
		for _, f := range fields {
			if f == word {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// tableRow returns the header and the row whose first column is name
// from kubectl's table output.
func tableRow(t *testing.T, out, name string) (header, row string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return lines[0], l
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return "", ""
}
