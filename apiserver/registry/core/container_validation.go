package core

import (
	"fmt"
	"path"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateContainers(containers []corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		idx := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, volumes, idx)...)
		if c.Name != "" {
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(idx.Child("restartPolicy"), "may not be set for non-init containers"))
		}
		errs = append(errs, validateProbe(c.LivenessProbe, true, idx.Child("livenessProbe"))...)
		errs = append(errs, validateProbe(c.ReadinessProbe, false, idx.Child("readinessProbe"))...)
		errs = append(errs, validateProbe(c.StartupProbe, true, idx.Child("startupProbe"))...)
		errs = append(errs, validateLifecycle(c.Lifecycle, idx.Child("lifecycle"))...)
	}
	return errs
}

// validateInitContainers checks init containers; their names must also
// differ from the regular containers'. Only restartable (sidecar) init
// containers may have probes and lifecycle hooks, since the others must
// run to completion before the pod starts.
func validateInitContainers(inits, regular []corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range inits {
		c := &inits[i]
		idx := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, volumes, idx)...)
		if c.Name != "" {
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
		sidecar := false
		if c.RestartPolicy != nil {
			if *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecar = true
			} else {
				errs = append(errs, field.NotSupported(idx.Child("restartPolicy"), *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
		}
		if sidecar {
			errs = append(errs, validateProbe(c.LivenessProbe, true, idx.Child("livenessProbe"))...)
			errs = append(errs, validateProbe(c.ReadinessProbe, false, idx.Child("readinessProbe"))...)
			errs = append(errs, validateProbe(c.StartupProbe, true, idx.Child("startupProbe"))...)
			errs = append(errs, validateLifecycle(c.Lifecycle, idx.Child("lifecycle"))...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(idx.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(idx.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(idx.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(idx.Child("startupProbe"), msg))
		}
	}
	return errs
}

// ephemeralContainerFields are the container fields, by JSON name, that an
// ephemeral container may set. An ephemeral container runs to debug a
// pod, not as part of its workload, so it has no ports, probes, hooks,
// resources or restart rules. This lists what is allowed rather than what
// is not, so that a field new to the API is refused until considered.
var ephemeralContainerFields = sets.New(
	"name", "image", "command", "args", "workingDir", "envFrom", "env", "volumeMounts", "volumeDevices",
	"terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
)

// validateEphemeralContainers checks ephemeral containers: each is a
// container with the restrictions above, its name differs from every
// other container's, and its target, when named, is one of the pod's
// containers or init containers (whose namespaces it joins).
func validateEphemeralContainers(ecs []corev1.EphemeralContainer, regular, inits []corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	targets := sets.New[string]()
	for _, c := range regular {
		targets.Insert(c.Name)
	}
	for _, c := range inits {
		targets.Insert(c.Name)
	}
	names := targets.Clone()
	for i := range ecs {
		ec := &ecs[i]
		idx := fldPath.Index(i)
		errs = append(errs, validateContainerCommon((*corev1.Container)(&ec.EphemeralContainerCommon), volumes, idx)...)
		if ec.Name != "" {
			if names.Has(ec.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), ec.Name))
			}
			names.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(idx.Child("targetContainerName"), ec.TargetContainerName))
		}
		v := reflect.ValueOf(ec.EphemeralContainerCommon)
		for j := 0; j < v.NumField(); j++ {
			name, _, _ := strings.Cut(v.Type().Field(j).Tag.Get("json"), ",")
			if !ephemeralContainerFields.Has(name) && !v.Field(j).IsZero() {
				errs = append(errs, field.Forbidden(idx.Child(name), "cannot be set for an ephemeral container"))
			}
		}
		// A subPath is a bind mount that outlives the container until
		// the pod ends.
		for j, m := range ec.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(idx.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an ephemeral container"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(idx.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an ephemeral container"))
			}
		}
	}
	return errs
}

// validateContainerCommon checks what every kind of container shares.
func validateContainerCommon(c *corev1.Container, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(c.Name, fldPath.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(fldPath.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		errs = append(errs, field.Invalid(fldPath.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, validatePullPolicy(c.ImagePullPolicy, fldPath.Child("imagePullPolicy"))...)
	errs = append(errs, validateTerminationMessagePolicy(c.TerminationMessagePolicy, fldPath.Child("terminationMessagePolicy"))...)
	errs = append(errs, validateContainerPorts(c.Ports, fldPath.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, fldPath.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, fldPath.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, fldPath.Child("volumeMounts"))...)
	errs = append(errs, ValidateResourceRequirements(&c.Resources, fldPath.Child("resources"))...)
	return errs
}

func validatePullPolicy(p corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever})}
}

func validateTerminationMessagePolicy(p corev1.TerminationMessagePolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError})}
}

// supportedProtocols are the port protocols, in the order Kubernetes lists them.
var supportedProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateProtocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, supportedProtocols)}
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, p := range ports {
		idx := fldPath.Index(i)
		if p.Name != "" {
			if msgs := validation.IsValidPortName(p.Name); len(msgs) > 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(idx.Child("name"), p.Name, msg))
				}
			} else if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), p.Name))
			} else {
				names.Insert(p.Name)
			}
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(idx.Child("containerPort"), ""))
		} else {
			errs = append(errs, validatePortNum(p.ContainerPort, idx.Child("containerPort"))...)
		}
		if p.HostPort != 0 {
			errs = append(errs, validatePortNum(p.HostPort, idx.Child("hostPort"))...)
		}
		errs = append(errs, validateProtocol(p.Protocol, idx.Child("protocol"))...)
	}
	return errs
}

// validatePortNumOrName checks a port given by number or by container port name.
func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		idx := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(idx.Child("name"), ""))
		} else if _, ok := volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(idx.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(idx.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, idx.Child("subPath"))...)
		}
	}
	return errs
}

// validateLocalDescendingPath refuses paths that could escape the volume.
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			errs = append(errs, field.Invalid(fldPath, p, "must not contain '..'"))
			break
		}
	}
	return errs
}
