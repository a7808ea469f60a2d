package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func debugContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1.36"}}
}

// ephemeralUpdate runs a pods/ephemeralcontainers write as the HTTP layer
// does: the pod's defaults, then the subresource's rules.
func ephemeralUpdate(p, old *corev1.Pod) field.ErrorList {
	PodStrategy().Default(p)
	s := PodEphemeralContainersStrategy()
	s.PrepareForUpdate(ctx, p, old)
	return s.ValidateUpdate(ctx, p, old)
}

// storedPod is a created pod with a volume, an init container, and the
// ephemeral container "dbg0".
func storedPod(t *testing.T) *corev1.Pod {
	t.Helper()
	p := testPod("a").with(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data"}}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36"}}
	}).Pod
	if errs := createPod(p); len(errs) > 0 {
		t.Fatal(errs)
	}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("dbg0")}
	PodStrategy().Default(p)
	return p
}

func TestEphemeralContainersAreAddedOnly(t *testing.T) {
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		want   []wantErr
	}{
		{"added", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("dbg1"))
		}, nil},
		{"added first, reordered", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append([]corev1.EphemeralContainer{debugContainer("dbg1")}, p.Spec.EphemeralContainers...)
		}, nil},
		{"targets a container", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.TargetContainerName = "app"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, nil},
		{"targets an init container", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.TargetContainerName = "init"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, nil},
		{"allowed fields", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.Command, ec.Args, ec.WorkingDir = []string{"sh"}, []string{"-c", "true"}, "/tmp"
			ec.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			ec.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}}
			ec.Stdin, ec.TTY = true, true
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, nil},
		{"removed", func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil },
			[]wantErr{{"spec.ephemeralContainers", field.ErrorTypeForbidden}}},
		{"changed", func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "busybox:1.37" },
			[]wantErr{{"spec.ephemeralContainers", field.ErrorTypeForbidden}}},
		{"retargeted", func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].TargetContainerName = "app" },
			[]wantErr{{"spec.ephemeralContainers", field.ErrorTypeForbidden}}},
		{"name taken by a container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("app"))
		}, []wantErr{{"spec.ephemeralContainers[1].name", field.ErrorTypeDuplicate}}},
		{"name taken by an init container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("init"))
		}, []wantErr{{"spec.ephemeralContainers[1].name", field.ErrorTypeDuplicate}}},
		{"name taken by an ephemeral container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("dbg0"))
		}, []wantErr{{"spec.ephemeralContainers[1].name", field.ErrorTypeDuplicate}}},
		{"bad name, no image", func(p *corev1.Pod) {
			ec := debugContainer("Dbg_1")
			ec.Image = ""
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, []wantErr{{"spec.ephemeralContainers[1].name", field.ErrorTypeInvalid}, {"spec.ephemeralContainers[1].image", field.ErrorTypeRequired}}},
		{"unknown target", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.TargetContainerName = "nope"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, []wantErr{{"spec.ephemeralContainers[1].targetContainerName", field.ErrorTypeNotFound}}},
		{"targets an ephemeral container", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.TargetContainerName = "dbg0"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, []wantErr{{"spec.ephemeralContainers[1].targetContainerName", field.ErrorTypeNotFound}}},
		{"mount of a missing volume", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, []wantErr{{"spec.ephemeralContainers[1].volumeMounts[0].name", field.ErrorTypeNotFound}}},
		{"subPath", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "y"}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, []wantErr{{"spec.ephemeralContainers[1].volumeMounts[0].subPath", field.ErrorTypeForbidden}}},
		{"bad env", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.Env = []corev1.EnvVar{{Name: ""}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, []wantErr{{"spec.ephemeralContainers[1].env[0].name", field.ErrorTypeRequired}}},
		{"what a workload container has", func(p *corev1.Pod) {
			ec := debugContainer("dbg1")
			ec.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			ec.LivenessProbe, ec.ReadinessProbe, ec.StartupProbe = probe, probe, probe
			ec.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			ec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("1")}}
			ec.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.NotRequired}}
			ec.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, []wantErr{
			{"spec.ephemeralContainers[1].ports", field.ErrorTypeForbidden},
			{"spec.ephemeralContainers[1].livenessProbe", field.ErrorTypeForbidden},
			{"spec.ephemeralContainers[1].readinessProbe", field.ErrorTypeForbidden},
			{"spec.ephemeralContainers[1].startupProbe", field.ErrorTypeForbidden},
			{"spec.ephemeralContainers[1].lifecycle", field.ErrorTypeForbidden},
			{"spec.ephemeralContainers[1].resources", field.ErrorTypeForbidden},
			{"spec.ephemeralContainers[1].resizePolicy", field.ErrorTypeForbidden},
			{"spec.ephemeralContainers[1].restartPolicy", field.ErrorTypeForbidden},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := storedPod(t)
			p := old.DeepCopy()
			tt.change(p)
			checkErrs(t, ephemeralUpdate(p, old), tt.want...)
		})
	}

	t.Run("messages say which container and what changed", func(t *testing.T) {
		old := storedPod(t)
		p := old.DeepCopy()
		p.Spec.EphemeralContainers[0].Image = "busybox:1.37"
		errs := ephemeralUpdate(p, old)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), `existing ephemeral container "dbg0" may not be changed`) ||
			!strings.Contains(errs[0].Error(), "spec.ephemeralContainers[0].image") {
			t.Errorf("changed: %v", errs)
		}
		p = old.DeepCopy()
		p.Spec.EphemeralContainers = nil
		if errs := ephemeralUpdate(p, old); len(errs) != 1 || !strings.Contains(errs[0].Error(), `existing ephemeral container "dbg0" may not be removed`) {
			t.Errorf("removed: %v", errs)
		}
		p = old.DeepCopy()
		ec := debugContainer("dbg1")
		ec.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		if errs := ephemeralUpdate(p, old); len(errs) != 1 || errs[0].Error() != "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an ephemeral container" {
			t.Errorf("ports: %v", errs)
		}
	})
}

func TestEphemeralContainersWriteOnlyTheirPart(t *testing.T) {
	old := storedPod(t)
	old.Status.Phase = corev1.PodRunning
	p := old.DeepCopy()
	p.Labels = map[string]string{"changed": "yes"}
	p.Annotations = map[string]string{"changed": "yes"}
	p.Finalizers = []string{"example.com/f"}
	p.Spec.Containers[0].Image = "nginx:2"
	p.Spec.NodeName = "elsewhere"
	p.Status.Phase = corev1.PodFailed
	p.ResourceVersion = "7"
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("dbg1"))
	if errs := ephemeralUpdate(p, old); len(errs) > 0 {
		t.Fatal(errs)
	}
	if p.Labels != nil || p.Annotations != nil || p.Finalizers != nil || p.Spec.Containers[0].Image != "nginx:1.27" ||
		p.Spec.NodeName != "" || p.Status.Phase != corev1.PodRunning {
		t.Errorf("fields other than spec.ephemeralContainers were taken from the request: %+v", p)
	}
	if p.ResourceVersion != "7" {
		t.Errorf("resourceVersion %q: the request's precondition was lost", p.ResourceVersion)
	}
	added := p.Spec.EphemeralContainers[1]
	if added.ImagePullPolicy != corev1.PullIfNotPresent || added.TerminationMessagePath != corev1.TerminationMessagePathDefault ||
		added.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("the added container was not defaulted: %+v", added)
	}
	if !PodStrategy().SpecChanged(p, old) {
		t.Error("adding an ephemeral container does not count as a spec change, so generation stays")
	}
}

func TestEphemeralContainersRefusedElsewhere(t *testing.T) {
	t.Run("static pod", func(t *testing.T) {
		old := storedPod(t)
		old.Annotations = map[string]string{mirrorPodAnnotation: "hash"}
		p := old.DeepCopy()
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("dbg1"))
		errs := ephemeralUpdate(p, old)
		checkErrs(t, errs, wantErr{"spec.ephemeralContainers", field.ErrorTypeForbidden})
		if len(errs) == 1 && !strings.Contains(errs[0].Error(), "static pods do not support ephemeral containers") {
			t.Errorf("got %v", errs)
		}
	})
	t.Run("pod update", func(t *testing.T) {
		s := PodStrategy()
		old := storedPod(t)
		p := old.DeepCopy()
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("dbg1"))
		s.Default(p)
		s.PrepareForUpdate(ctx, p, old)
		errs := s.ValidateUpdate(ctx, p, old)
		checkErrs(t, errs, wantErr{"spec.ephemeralContainers", field.ErrorTypeForbidden})
		if len(errs) == 1 && !strings.Contains(errs[0].Error(), "pods/ephemeralcontainers subresource") {
			t.Errorf("the refusal does not say what to do: %v", errs)
		}
		// An update that leaves them alone is fine.
		p = old.DeepCopy()
		p.Spec.Containers[0].Image = "nginx:2"
		s.Default(p)
		s.PrepareForUpdate(ctx, p, old)
		checkErrs(t, s.ValidateUpdate(ctx, p, old))
	})
	t.Run("pod template", func(t *testing.T) {
		tmpl := &corev1.PodTemplateSpec{Spec: testPod("a").Pod.Spec}
		tmpl.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("dbg")}
		DefaultPodTemplateSpec(tmpl)
		checkErrs(t, ValidatePodTemplateSpec(tmpl, field.NewPath("spec", "template")),
			wantErr{"spec.template.spec.ephemeralContainers", field.ErrorTypeForbidden})
	})
}
