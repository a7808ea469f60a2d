package embedded

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/testimage"
	"cairn/internal/topdir"
	"cairn/node/images"
	"cairn/node/network"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImageServiceListsPullsAndRemoves(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/team/busybox:v1"
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, testimage.BusyboxImage(t)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, err := images.Open(images.Config{Dir: filepath.Join(dir, "images")})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(Config{StateDir: filepath.Join(dir, "runtime"), NetNSDir: filepath.Join(dir, "netns"), Images: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := &runtimeapi.ImageSpec{Image: ref}
	if st, err := rt.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec}); err != nil || st.Image != nil {
		t.Fatalf("ImageStatus before the pull = %v, %v; want no image and no error", st, err)
	}
	pulled, err := rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, Auth: &runtimeapi.AuthConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil || st.Image.GetId() != pulled.ImageRef || len(st.Image.RepoDigests) != 1 || st.Image.RepoTags[0] != ref {
		t.Fatalf("ImageStatus after the pull = %v, %v", st, err)
	}
	list, err := rt.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(list.Images) != 1 {
		t.Fatalf("ListImages = %v, %v", list, err)
	}
	if _, err := rt.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: pulled.ImageRef}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: spec}); err != nil {
		t.Errorf("removing a removed image: %v", err)
	}
	if list, _ := rt.ListImages(ctx, &runtimeapi.ListImagesRequest{}); len(list.Images) != 0 {
		t.Errorf("ListImages after removal = %v", list)
	}
}

func TestUnknownObjectsAreNotFoundAndRemovalsIdempotent(t *testing.T) {
	dir := t.TempDir()
	store, err := images.Open(images.Config{Dir: filepath.Join(dir, "images")})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(Config{StateDir: filepath.Join(dir, "runtime"), NetNSDir: filepath.Join(dir, "netns"), Images: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"ContainerStatus": func() error {
			_, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "nope"})
			return err
		},
		"PodSandboxStatus": func() error {
			_, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "nope"})
			return err
		},
		"StartContainer": func() error {
			_, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "nope"})
			return err
		},
		"ExecSync": func() error {
			_, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "nope", Cmd: []string{"true"}})
			return err
		},
	} {
		if err := call(); status.Code(err) != codes.NotFound {
			t.Errorf("%s of an unknown object = %v, want a NotFound status", name, err)
		}
	}
	for name, call := range map[string]func() error{
		"RemoveContainer": func() error {
			_, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: "nope"})
			return err
		},
		"StopPodSandbox": func() error {
			_, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "nope"})
			return err
		},
		"RemovePodSandbox": func() error {
			_, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: "nope"})
			return err
		},
	} {
		if err := call(); err != nil {
			t.Errorf("%s of an unknown object = %v, want success", name, err)
		}
	}
	if _, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default"},
	}}); err == nil || !strings.Contains(err.Error(), "hostNetwork") {
		t.Errorf("RunPodSandbox without a pod network = %v, want an error saying only hostNetwork pods can run", err)
	}
}

func TestStatusWaitsForThePodCIDR(t *testing.T) {
	e := newTestEnv(t)
	dir := t.TempDir()
	ns := filepath.Join(dir, "netns")
	if err := network.NewNetNS(ns); err != nil {
		t.Fatal(err)
	}
	defer network.RemoveNetNS(ns)
	n, err := network.New(network.Config{NetNS: ns, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { n.Teardown(); n.Close() }()
	cfg := e.cfg
	cfg.StateDir, cfg.Network = filepath.Join(dir, "runtime"), n
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	networkReady := func() bool {
		st, err := rt.Status(e.ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range st.Status.Conditions {
			if c.Type == runtimeapi.NetworkReady {
				return c.Status
			}
		}
		t.Fatal("no NetworkReady condition")
		return false
	}
	if networkReady() {
		t.Error("network ready before the pod CIDR is known")
	}
	if _, err := rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: e.podConfig("early")}); err == nil {
		t.Error("a sandbox started before the pod CIDR is known")
	}
	if entries, _ := os.ReadDir(filepath.Join(cfg.StateDir, "sandboxes")); len(entries) != 0 {
		t.Errorf("a failed RunPodSandbox left %d sandbox directories", len(entries))
	}
	if _, err := rt.UpdateRuntimeConfig(e.ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{
		NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "fd00::/64,10.97.9.0/24"},
	}}); err != nil {
		t.Fatal(err)
	}
	if !networkReady() || n.PodCIDR().String() != "10.97.9.0/24" {
		t.Errorf("after UpdateRuntimeConfig: ready %v, podCIDR %s; want ready with 10.97.9.0/24", networkReady(), n.PodCIDR())
	}
}

func TestPerObjectDirectoriesAreSpreadOverTheDisk(t *testing.T) {
	e := newTestEnv(t)
	var st unix.Statfs_t
	if err := unix.Statfs(e.cfg.StateDir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.EXT4_SUPER_MAGIC {
		t.Skipf("the state directory is not on ext4 (magic %#x)", st.Type)
	}
	for _, d := range []string{"sandboxes", "containers"} {
		if marked, err := topdir.Marked(filepath.Join(e.cfg.StateDir, d)); err != nil || !marked {
			t.Errorf("%s: top directory flag %v, err %v", d, marked, err)
		}
	}
}

func TestRecordsKeepTheirOwnCopyOfTheRequest(t *testing.T) {
	e := newTestEnv(t)
	podCfg := e.podConfig("copy")
	resp, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: podCfg})
	if err != nil {
		t.Fatal(err)
	}
	cfg := container("main", "true")
	cfg.Labels = map[string]string{"tier": "web"}
	id := e.create(resp.PodSandboxId, cfg)
	// The caller reuses its messages: the records must not see it.
	podCfg.Labels["app"], podCfg.Metadata.Name = "changed", "changed"
	cfg.Labels["tier"], cfg.Metadata.Name = "changed", "changed"

	check := func(rt *Runtime, when string) {
		sb, err := rt.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: resp.PodSandboxId})
		if err != nil {
			t.Fatal(err)
		}
		if got := sb.Status.GetLabels()["app"]; got != "copy" || sb.Status.GetMetadata().GetName() != "copy" {
			t.Errorf("%s: sandbox label app=%q, name %q; want copy", when, got, sb.Status.GetMetadata().GetName())
		}
		st, err := rt.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Status.GetLabels()["tier"]; got != "web" || st.Status.GetMetadata().GetName() != "main" {
			t.Errorf("%s: container label tier=%q, name %q; want web, main", when, got, st.Status.GetMetadata().GetName())
		}
	}
	check(e.rt, "after creation")
	// And what was saved reads back the same.
	check(e.newRuntime(), "after a restart")
}
