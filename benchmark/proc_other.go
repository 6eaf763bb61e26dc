//go:build !linux

package benchmark

import (
	"syscall"
	"time"
)

// childAttr puts a node in its own process group (a terminal's Ctrl-C
// reaches the bench, which stops the nodes in order).
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func processTreeCPU([]int) (time.Duration, error) { return 0, errNoProcessCPU }
