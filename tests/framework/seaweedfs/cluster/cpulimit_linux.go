package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupRoot is where cgroups are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cpuPeriodMicros is the scheduling period of a CPU limit: a process
// limited to m thousandths of a CPU runs m*100 µs of every 100 ms.
const cpuPeriodMicros = 100_000

// limitCPU moves process pid into the cgroup named group, created if
// needed, limited to milli thousandths of a CPU. It uses the cpu controller
// of cgroup v2 when the unified hierarchy has it, else cgroup v1's; it
// needs root. It returns the group's directory, for releaseCPU.
func limitCPU(group string, pid, milli int) (string, error) {
	quota := strconv.Itoa(milli * cpuPeriodMicros / 1000)
	if v2, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil && hasWord(string(v2), "cpu") {
		parent := filepath.Join(cgroupRoot, "schain-weed")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return "", cgroupError(err)
		}
		if err := os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+cpu"), 0o644); err != nil {
			return "", cgroupError(err)
		}
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+cpu"), 0o644); err != nil {
			return "", cgroupError(err)
		}
		dir := filepath.Join(parent, group)
		return dir, join(dir, pid, map[string]string{"cpu.max": quota + " " + strconv.Itoa(cpuPeriodMicros)})
	}
	v1 := filepath.Join(cgroupRoot, "cpu")
	if _, err := os.Stat(filepath.Join(v1, "cpu.cfs_quota_us")); err != nil {
		return "", cgroupError(errors.New("no cgroup cpu controller (cgroup v2 without cpu, and no v1 cpu hierarchy)"))
	}
	dir := filepath.Join(v1, "schain-weed", group)
	return dir, join(dir, pid, map[string]string{"cpu.cfs_period_us": strconv.Itoa(cpuPeriodMicros), "cpu.cfs_quota_us": quota})
}

// join creates dir, writes the limits (in a fixed order: the period before
// the quota) and moves pid in.
func join(dir string, pid int, limits map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cgroupError(err)
	}
	for _, name := range []string{"cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.max"} {
		if v, ok := limits[name]; ok {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
				return cgroupError(fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return cgroupError(err)
	}
	return nil
}

// releaseCPU removes a group limitCPU made, once its processes are gone
// (best effort: a group still holding a process stays).
func releaseCPU(dir string) {
	if dir != "" {
		_ = os.Remove(dir)
	}
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

func cgroupError(err error) error {
	return fmt.Errorf("%w: %w (a CPU limit per master needs root and the cgroup cpu controller)", ErrCPULimit, err)
}
