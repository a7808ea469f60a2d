package framework

import (
	"errors"
	"strings"
)

// Code is the outcome of a plugin call.
type Code int

// The codes a plugin may return. Unschedulable means preemption might
// help; UnschedulableAndUnresolvable means it cannot (a taint, a missing
// label), so preemption skips the node.
const (
	Success Code = iota
	Error
	Unschedulable
	UnschedulableAndUnresolvable
	Skip
)

// String names the code in logs.
func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Error:
		return "Error"
	case Unschedulable:
		return "Unschedulable"
	case UnschedulableAndUnresolvable:
		return "UnschedulableAndUnresolvable"
	case Skip:
		return "Skip"
	}
	return "Unknown"
}

// Status is the result of a plugin call. A nil *Status means success, so
// the common path allocates nothing.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a status with code and the reasons a user reads.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an internal error; nil stays nil (success).
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status code; a nil status is Success.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports whether the call succeeded.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports whether a PreFilter or PreScore plugin asked for its
// Filter or Score to be skipped for this pod.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the pod does not fit (as opposed to an
// internal error).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons returns the reasons users read in FailedScheduling events.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin names the plugin that returned the status, set by the runner.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records which plugin produced s and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// AsError returns the status as an error, nil on success or skip.
func (s *Status) AsError() error {
	if s.IsSuccess() || s.IsSkip() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}
