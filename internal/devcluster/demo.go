package devcluster

import (
	"context"
	"fmt"

	"cairn/internal/devcluster/demoapp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Names of the demo's objects, in the default namespace.
const (
	DemoName      = "demo"
	DemoNamespace = metav1.NamespaceDefault
	// DemoReplicas is the demo Deployment's size.
	DemoReplicas = 3
	// DemoServicePort is the demo Service's port.
	DemoServicePort = 80
)

// demoLabels select the demo's pods.
func demoLabels() map[string]string { return map[string]string{"app": DemoName} }

// DemoDeployment is the demo Deployment: DemoReplicas pods of the demo
// image, each saying its name, IP and node, ready once it answers.
func DemoDeployment() *appsv1.Deployment {
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: DemoName, Namespace: DemoNamespace, Labels: demoLabels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(DemoReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: demoLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: demoLabels()},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:            DemoName,
					Image:           DemoImage,
					ImagePullPolicy: corev1.PullNever,
					Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: demoapp.DefaultPort, Protocol: corev1.ProtocolTCP}},
					Env:             []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_IP", "status.podIP"), fieldEnv("NODE_NAME", "spec.nodeName")},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
						PeriodSeconds: 2,
					},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
					}},
				}}},
			},
		},
	}
}

// DemoService is the demo's ClusterIP Service.
func DemoService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: DemoName, Namespace: DemoNamespace, Labels: demoLabels()},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: demoLabels(),
			Ports:    []corev1.ServicePort{{Name: "http", Port: DemoServicePort, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// applyDemo creates the demo's Deployment and Service, or brings back
// their specs if they exist, and returns the Service's cluster IP.
func applyDemo(ctx context.Context, c kubernetes.Interface) (string, error) {
	want := DemoDeployment()
	deps := c.AppsV1().Deployments(DemoNamespace)
	if _, err := deps.Create(ctx, want, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		cur, err := deps.Get(ctx, DemoName, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("devcluster: demo deployment: %w", err)
		}
		cur.Spec = want.Spec
		if _, err := deps.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return "", fmt.Errorf("devcluster: demo deployment: %w", err)
		}
	} else if err != nil {
		return "", fmt.Errorf("devcluster: demo deployment: %w", err)
	}
	svcs := c.CoreV1().Services(DemoNamespace)
	svc, err := svcs.Create(ctx, DemoService(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		svc, err = svcs.Get(ctx, DemoName, metav1.GetOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("devcluster: demo service: %w", err)
	}
	return svc.Spec.ClusterIP, nil
}
