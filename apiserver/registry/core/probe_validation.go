package core

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateProbe checks a probe; liveness and startup probes must succeed
// once to count, since a second success means nothing to them.
func validateProbe(p *corev1.Probe, mustSucceedOnce bool, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateHandler(probeHandlers(&p.ProbeHandler), fldPath)
	errs = append(errs, ValidateNonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, ValidateNonnegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, ValidateNonnegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, ValidateNonnegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, ValidateNonnegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if mustSucceedOnce && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, fldPath *field.Path) field.ErrorList {
	if l == nil {
		return nil
	}
	var errs field.ErrorList
	if l.PostStart != nil {
		errs = append(errs, validateHandler(lifecycleHandlers(l.PostStart), fldPath.Child("postStart"))...)
	}
	if l.PreStop != nil {
		errs = append(errs, validateHandler(lifecycleHandlers(l.PreStop), fldPath.Child("preStop"))...)
	}
	return errs
}

// handlers lists the actions a probe or hook sets, in the order Kubernetes
// checks them.
type handlers struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func probeHandlers(h *corev1.ProbeHandler) handlers {
	return handlers{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}
}

func lifecycleHandlers(h *corev1.LifecycleHandler) handlers {
	return handlers{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

func validateHandler(h handlers, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	more := func(name string) bool {
		n++
		if n > 1 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return false
		}
		return true
	}
	if h.exec != nil && more("exec") && len(h.exec.Command) == 0 {
		errs = append(errs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	if h.httpGet != nil && more("httpGet") {
		errs = append(errs, validatePortNumOrName(h.httpGet.Port, fldPath.Child("httpGet", "port"))...)
		if h.httpGet.Scheme != corev1.URISchemeHTTP && h.httpGet.Scheme != corev1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(fldPath.Child("httpGet", "scheme"), h.httpGet.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
		}
	}
	if h.tcpSocket != nil && more("tcpSocket") {
		errs = append(errs, validatePortNumOrName(h.tcpSocket.Port, fldPath.Child("tcpSocket", "port"))...)
	}
	if h.grpc != nil && more("grpc") {
		errs = append(errs, validatePortNum(h.grpc.Port, fldPath.Child("grpc", "port"))...)
	}
	if h.sleep != nil && more("sleep") {
		errs = append(errs, ValidateNonnegative(h.sleep.Seconds, fldPath.Child("sleep", "seconds"))...)
	}
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}
