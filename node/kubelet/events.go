package kubelet

import (
	"fmt"

	"cairn/node/kubelet/prober"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Event reasons, as the kubelet names them.
const (
	eventPulling         = "Pulling"
	eventPulled          = "Pulled"
	eventFailed          = "Failed"
	eventBackOff         = "BackOff"
	eventErrImageNever   = "ErrImageNeverPull"
	eventCreated         = "Created"
	eventStarted         = "Started"
	eventKilling         = "Killing"
	eventUnhealthy       = "Unhealthy"
	eventFailedMount     = "FailedMount"
	eventFailedSandbox   = "FailedCreatePodSandBox"
	eventFailedPostStart = "FailedPostStartHook"
	eventFailedPreStop   = "FailedPreStopHook"
	eventStarting        = "Starting"
	eventNodeReady       = "NodeReady"
	eventNodeNotReady    = "NodeNotReady"
	eventSandboxChanged  = "SandboxChanged"
	eventFailedKillPod   = "FailedKillPod"
	eventEvicted         = "Evicted"
)

// newRecorder records events as the kubelet of node.
func newRecorder(b record.EventBroadcaster, client kubernetes.Interface, node string) record.EventRecorder {
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node})
}

// containerRef is what a container's events are about: the pod, with
// the container's field path.
func containerRef(pod *corev1.Pod, c *corev1.Container) *corev1.ObjectReference {
	ref := podRef(pod)
	if c == nil {
		return ref
	}
	kind := "containers"
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			kind = "initContainers"
		}
	}
	if isEphemeral(pod, c.Name) {
		kind = "ephemeralContainers"
	}
	ref.FieldPath = fmt.Sprintf("spec.%s{%s}", kind, c.Name)
	return ref
}

func podRef(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion}
}

func (k *Kubelet) nodeRef() *corev1.ObjectReference {
	// The kubelet names its node's events' UID after the node, as
	// Kubernetes does, so they group whatever the Node object's UID.
	return &corev1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName, UID: types.UID(k.cfg.NodeName)}
}

func (k *Kubelet) event(pod *corev1.Pod, c *corev1.Container, typ, reason, format string, args ...any) {
	if k.recorder == nil {
		return
	}
	k.recorder.Eventf(containerRef(pod, c), typ, reason, format, args...)
}

// probeFailed records an Unhealthy event for a failed probe attempt.
func (k *Kubelet) probeFailed(pod *corev1.Pod, container string, kind prober.Kind, msg string) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			c = &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == container {
			c = &pod.Spec.InitContainers[i]
		}
	}
	k.event(pod, c, corev1.EventTypeWarning, eventUnhealthy, "%s probe failed: %s", kind, msg)
}
