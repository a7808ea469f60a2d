package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestPodDefaultsAreWhatKubectlShows(t *testing.T) {
	tests := []struct {
		name  string
		pod   *corev1.Pod
		check func(t *testing.T, p *corev1.Pod)
	}{
		{"spec defaults", testPod("a").Pod, func(t *testing.T, p *corev1.Pod) {
			s := p.Spec
			if s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst ||
				*s.TerminationGracePeriodSeconds != 30 || s.SchedulerName != "default-scheduler" ||
				s.SecurityContext == nil || !*s.EnableServiceLinks {
				t.Errorf("pod spec defaults wrong: %+v", s)
			}
			c := s.Containers[0]
			if c.ImagePullPolicy != corev1.PullIfNotPresent || c.TerminationMessagePath != "/dev/termination-log" ||
				c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
				t.Errorf("container defaults wrong: %+v", c)
			}
		}},
		{"latest tag pulls always", testPod("a").image("nginx:latest").Pod, func(t *testing.T, p *corev1.Pod) {
			if got := p.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
				t.Errorf("imagePullPolicy = %s, want Always", got)
			}
		}},
		{"no tag pulls always", testPod("a").image("registry:5000/team/nginx").Pod, func(t *testing.T, p *corev1.Pod) {
			if got := p.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
				t.Errorf("imagePullPolicy = %s, want Always", got)
			}
		}},
		{"digest only pulls if not present", testPod("a").image("nginx@sha256:abcd").Pod, func(t *testing.T, p *corev1.Pod) {
			if got := p.Spec.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
				t.Errorf("imagePullPolicy = %s, want IfNotPresent", got)
			}
		}},
		{"port protocol TCP", testPod("a").port(80).Pod, func(t *testing.T, p *corev1.Pod) {
			if got := p.Spec.Containers[0].Ports[0].Protocol; got != corev1.ProtocolTCP {
				t.Errorf("protocol = %s", got)
			}
		}},
		{"requests copied from limits", testPod("a").limit("cpu", "500m").limit("memory", "1Gi").Pod, func(t *testing.T, p *corev1.Pod) {
			r := p.Spec.Containers[0].Resources.Requests
			if r.Cpu().String() != "500m" || r.Memory().String() != "1Gi" {
				t.Errorf("requests = %v", r)
			}
			if p.Status.QOSClass != corev1.PodQOSGuaranteed {
				t.Errorf("qos = %s, want Guaranteed", p.Status.QOSClass)
			}
		}},
		{"probe and volume defaults", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch"}, {Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}}
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
		}).Pod, func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Volumes[0].EmptyDir == nil {
				t.Error("volume without source did not become emptyDir")
			}
			if *p.Spec.Volumes[1].ConfigMap.DefaultMode != 0o644 {
				t.Error("configMap defaultMode not 0644")
			}
			pr := p.Spec.Containers[0].LivenessProbe
			if pr.TimeoutSeconds != 1 || pr.PeriodSeconds != 10 || pr.SuccessThreshold != 1 || pr.FailureThreshold != 3 ||
				pr.HTTPGet.Path != "/" || pr.HTTPGet.Scheme != corev1.URISchemeHTTP {
				t.Errorf("probe defaults wrong: %+v", pr)
			}
		}},
		{"created pending and best effort", testPod("a").with(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
		}).Pod, func(t *testing.T, p *corev1.Pod) {
			if p.Status.Phase != corev1.PodPending || p.Status.QOSClass != corev1.PodQOSBestEffort || p.Generation != 1 {
				t.Errorf("status = %+v generation %d", p.Status, p.Generation)
			}
		}},
		{"burstable", testPod("a").req("cpu", "100m").Pod, func(t *testing.T, p *corev1.Pod) {
			if p.Status.QOSClass != corev1.PodQOSBurstable {
				t.Errorf("qos = %s", p.Status.QOSClass)
			}
		}},
		{"host network ports", testPod("a").port(8080).with(func(p *corev1.Pod) { p.Spec.HostNetwork = true }).Pod, func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Containers[0].Ports[0].HostPort != 8080 {
				t.Error("hostPort not defaulted to containerPort")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := createPod(tt.pod); len(errs) > 0 {
				t.Fatalf("valid pod refused: %v", errs)
			}
			tt.check(t, tt.pod)
		})
	}
}

func TestPodValidationNamesTheFieldLikeKubernetes(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []wantErr
	}{
		{"no containers", testPod("a").with(func(p *corev1.Pod) { p.Spec.Containers = nil }).Pod,
			[]wantErr{{"spec.containers", field.ErrorTypeRequired}}},
		{"no image", testPod("a").image("").Pod,
			[]wantErr{{"spec.containers[0].image", field.ErrorTypeRequired}}},
		{"bad container name", testPod("a").with(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "My_App" }).Pod,
			[]wantErr{{"spec.containers[0].name", field.ErrorTypeInvalid}}},
		{"duplicate container name", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "app", Image: "x"})
		}).Pod, []wantErr{{"spec.containers[1].name", field.ErrorTypeDuplicate}}},
		{"port out of range", testPod("a").port(70000).Pod,
			[]wantErr{{"spec.containers[0].ports[0].containerPort", field.ErrorTypeInvalid}}},
		{"bad port name", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "Http_Port", ContainerPort: 80}}
		}).Pod, []wantErr{{"spec.containers[0].ports[0].name", field.ErrorTypeInvalid}}},
		{"request above limit", testPod("a").req("cpu", "2").limit("cpu", "1").Pod,
			[]wantErr{{"spec.containers[0].resources.requests", field.ErrorTypeInvalid}}},
		{"negative memory", testPod("a").req("memory", "-1Gi").Pod,
			[]wantErr{{"spec.containers[0].resources.requests[memory]", field.ErrorTypeInvalid}}},
		{"unknown resource", testPod("a").req("gpu", "1").Pod,
			[]wantErr{{"spec.containers[0].resources.requests[gpu]", field.ErrorTypeInvalid}}},
		{"bad restart policy", testPod("a").with(func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }).Pod,
			[]wantErr{{"spec.restartPolicy", field.ErrorTypeNotSupported}}},
		{"mount of unknown volume", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}).Pod, []wantErr{{"spec.containers[0].volumeMounts[0].name", field.ErrorTypeNotFound}}},
		{"bad name", testPod("Web_1").Pod, []wantErr{{"metadata.name", field.ErrorTypeInvalid}}},
		{"bad label", testPod("a").with(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "a b"} }).Pod,
			[]wantErr{{"metadata.labels", field.ErrorTypeInvalid}}},
		{"no namespace", testPod("a").with(func(p *corev1.Pod) { p.Namespace = "" }).Pod,
			[]wantErr{{"metadata.namespace", field.ErrorTypeRequired}}},
		{"liveness needs one success", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}, SuccessThreshold: 2}
		}).Pod, []wantErr{{"spec.containers[0].livenessProbe.tcpSocket.port", field.ErrorTypeInvalid}, {"spec.containers[0].livenessProbe.successThreshold", field.ErrorTypeInvalid}}},
		{"probe without handler", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
		}).Pod, []wantErr{{"spec.containers[0].readinessProbe", field.ErrorTypeRequired}}},
		{"env var from two sources", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
				FieldRef:        &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"},
			}}}
		}).Pod, []wantErr{{"spec.containers[0].env[0].valueFrom", field.ErrorTypeInvalid}}},
		{"toleration exists with value", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}).Pod, []wantErr{{"spec.tolerations[0].value", field.ErrorTypeInvalid}}},
		{"init container probe", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", ReadinessProbe: &corev1.Probe{}}}
		}).Pod, []wantErr{{"spec.initContainers[0].readinessProbe", field.ErrorTypeForbidden}}},
		{"duplicate host port", testPod("a").with(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "x"})
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			p.Spec.Containers[1].Ports = []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}}
		}).Pod, []wantErr{{"spec.containers[1].ports[0].hostPort", field.ErrorTypeDuplicate}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, createPod(tt.pod), tt.want...)
		})
	}
}

func TestPodMessagesMatchKubernetes(t *testing.T) {
	errs := createPod(testPod("a").req("cpu", "2").limit("cpu", "500m").Pod)
	want := `spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 500m`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

func TestPodSpecIsImmutableButForImages(t *testing.T) {
	s := PodStrategy()
	base := func() *corev1.Pod {
		p := testPod("a").port(80).with(func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		}).Pod
		if errs := createPod(p); len(errs) > 0 {
			t.Fatal(errs)
		}
		return p
	}
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		want   []wantErr
	}{
		{"image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil},
		{"activeDeadlineSeconds set", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }, nil},
		{"toleration added", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists})
		}, nil},
		{"labels", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, nil},
		{"nodeName", func(p *corev1.Pod) { p.Spec.NodeName = "n2" }, []wantErr{{"spec", field.ErrorTypeForbidden}}},
		{"ports", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 81 }, []wantErr{{"spec", field.ErrorTypeForbidden}}},
		{"toleration removed", func(p *corev1.Pod) { p.Spec.Tolerations = nil }, []wantErr{{"spec.tolerations", field.ErrorTypeForbidden}}},
		{"container added", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "x", ImagePullPolicy: "Always", TerminationMessagePolicy: "File"})
		}, []wantErr{{"spec.containers", field.ErrorTypeForbidden}}},
		{"image emptied", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []wantErr{{"spec.containers[0].image", field.ErrorTypeRequired}}},
		{"name", func(p *corev1.Pod) { p.Name = "b" }, []wantErr{{"metadata.name", field.ErrorTypeInvalid}}},
		{"no resourceVersion", func(p *corev1.Pod) { p.ResourceVersion = "" }, []wantErr{{"metadata.resourceVersion", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := base()
			p := old.DeepCopy()
			tt.change(p)
			s.Default(p)
			s.PrepareForUpdate(ctx, p, old)
			checkErrs(t, s.ValidateUpdate(ctx, p, old), tt.want...)
		})
	}
	t.Run("message lists what may change", func(t *testing.T) {
		old := base()
		p := old.DeepCopy()
		p.Spec.NodeName = "n2"
		errs := s.ValidateUpdate(ctx, p, old)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`") ||
			!strings.Contains(errs[0].Error(), "spec.nodeName") {
			t.Errorf("got %v", errs)
		}
	})
}

func TestPodStatusAndSpecIgnoreEachOther(t *testing.T) {
	s := PodStrategy()
	old := testPod("a").Pod
	createPod(old)
	old.Status.Phase = corev1.PodRunning

	main := old.DeepCopy()
	main.Spec.Containers[0].Image = "nginx:2"
	main.Status.Phase = corev1.PodFailed
	s.PrepareForUpdate(ctx, main, old)
	if main.Status.Phase != corev1.PodRunning || main.Spec.Containers[0].Image != "nginx:2" {
		t.Errorf("main update: phase %s image %s", main.Status.Phase, main.Spec.Containers[0].Image)
	}

	st := old.DeepCopy()
	st.Spec.Containers[0].Image = "nginx:2"
	st.Status.Phase = corev1.PodSucceeded
	st.Status.QOSClass = ""
	st.OwnerReferences = []metav1.OwnerReference{{Name: "x"}}
	s.PrepareStatusForUpdate(ctx, st, old)
	if st.Status.Phase != corev1.PodSucceeded || st.Spec.Containers[0].Image != "nginx:1.27" ||
		st.Status.QOSClass != old.Status.QOSClass || st.OwnerReferences != nil {
		t.Errorf("status update kept %+v", st)
	}
	if errs := s.ValidateUpdate(ctx, st, old); len(errs) > 0 {
		t.Errorf("status update refused: %v", errs)
	}
	if s.SpecChanged(st, old) || !s.SpecChanged(main, old) {
		t.Error("SpecChanged wrong")
	}
}

func TestBindPodAssignsOnce(t *testing.T) {
	now := metav1.Now()
	p := testPod("a").Pod
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{"k": "v"}}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if errs := ValidateBinding(b); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := BindPod(p, b, now); err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "n1" || p.Annotations["k"] != "v" || len(p.Status.Conditions) != 1 ||
		p.Status.Conditions[0].Type != corev1.PodScheduled || p.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("bound pod = %+v", p)
	}
	err := BindPod(p, b, now)
	if err == nil || !strings.Contains(err.Error(), `pod a is already assigned to node "n1"`) {
		t.Errorf("second bind: %v", err)
	}
	checkErrs(t, ValidateBinding(&corev1.Binding{Target: corev1.ObjectReference{Kind: "Pod"}}),
		wantErr{"target.kind", field.ErrorTypeNotSupported}, wantErr{"target.name", field.ErrorTypeRequired})
}

func TestPodFieldsSelectNodeAndPhase(t *testing.T) {
	p := testPod("a").with(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }).Pod
	createPod(p)
	f := PodFields(p)
	if f["spec.nodeName"] != "n1" || f["status.phase"] != "Pending" || f["metadata.name"] != "a" || f["metadata.namespace"] != "default" {
		t.Errorf("fields = %v", f)
	}
}
