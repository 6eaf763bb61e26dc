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

func processCPU([]int) (time.Duration, error) { return 0, errNoProcessCPU }

// TreeUse is what a process tree uses (Linux only).
type TreeUse struct {
	CPU       time.Duration `json:"cpu_ns"`
	RSS       uint64        `json:"rss_bytes"`
	RootRSS   uint64        `json:"root_rss_bytes"`
	Processes int           `json:"processes"`
}

// ProcessTreeUse is unavailable here.
func ProcessTreeUse(int) (TreeUse, error) { return TreeUse{}, errNoProcessCPU }

func machineBusy() (time.Duration, error) { return 0, errNoProcessCPU }
