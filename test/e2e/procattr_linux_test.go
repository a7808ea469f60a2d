package e2e

import "syscall"

// childProcAttr makes a child die with the test binary, so servers never
// outlive a test run that panics or hits -timeout before its cleanups.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
