//go:build !linux

package e2e

import "syscall"

// childProcAttr has no parent-death signal to ask for outside Linux; the
// tests' cleanups stop their processes.
func childProcAttr() *syscall.SysProcAttr { return nil }
