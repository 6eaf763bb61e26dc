package cluster

import "syscall"

// sysProcAttr detaches a process into its own session, or ties it to this
// process's life (SIGKILL when this process dies: tests and benchmarks never
// leak weed processes, even when killed themselves).
func sysProcAttr(detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
