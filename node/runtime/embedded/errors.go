package embedded

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The runtime's errors carry gRPC status codes, as the cri runtime's do
// when containerd answers, so that the kubelet handles both runtimes the
// same way (status.Code(err) == codes.NotFound, ...).

// notFound is the error for an unknown sandbox or container.
func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "embedded: %s %s not found", kind, id)
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// timeoutError is an exec that outlived its timeout: both a gRPC
// DeadlineExceeded status and a context.DeadlineExceeded.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, context.DeadlineExceeded) true.
func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }

// GRPCStatus makes status.Code(err) return codes.DeadlineExceeded.
func (e *timeoutError) GRPCStatus() *status.Status { return status.New(codes.DeadlineExceeded, e.msg) }
