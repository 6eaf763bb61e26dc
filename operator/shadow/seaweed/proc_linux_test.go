package seaweed

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the child if the test binary dies
// before its cleanups run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
