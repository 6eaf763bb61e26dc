//go:build !linux

package benchmark

import (
	"errors"
	"syscall"
	"time"
)

// childAttr puts a node in its own process group (a terminal's Ctrl-C
// reaches the bench, which stops the nodes in order).
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// errNoProcessCPU: this platform has no per-process CPU times the bench
// can read (/proc).
var errNoProcessCPU = errors.New("process CPU times are read from /proc (Linux only)")

func processTreeCPU([]int) (time.Duration, error) { return 0, errNoProcessCPU }
