//go:build !linux

package cluster

import "syscall"

// sysProcAttr detaches a process into its own session, or its own process
// group (no parent-death signal outside Linux).
func sysProcAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}
