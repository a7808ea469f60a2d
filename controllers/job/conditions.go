package job

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Messages Kubernetes puts on job conditions.
const (
	msgBackoffLimitExceeded = "Job has reached the specified backoff limit"
	msgDeadlineExceeded     = "Job was active longer than specified deadline"
	msgCompletionsReached   = "Reached expected number of succeeded pods"
	reasonSuspended         = "JobSuspended"
	reasonResumed           = "JobResumed"
)

// condition returns job's condition t when it is True, or nil.
func condition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t && st.Conditions[i].Status == corev1.ConditionTrue {
			return &st.Conditions[i]
		}
	}
	return nil
}

// finished reports whether job reached its terminal Complete or Failed
// condition.
func finished(job *batchv1.Job) bool {
	return condition(&job.Status, batchv1.JobComplete) != nil || condition(&job.Status, batchv1.JobFailed) != nil
}

// setCondition sets condition t of st and reports whether it changed; the
// transition time moves only with the status.
func setCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) bool {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return false
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, msg, now
		return true
	}
	st.Conditions = append(st.Conditions, batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: msg,
		LastProbeTime: now, LastTransitionTime: now})
	return true
}
