package cluster

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLimitCPU: a process moved into a group runs under the quota asked
// for, and the group goes away with it. Needs root and a cgroup cpu
// controller; skipped otherwise.
func TestLimitCPU(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	require := require.New(t)
	cmd := exec.Command("sleep", "60")
	require.NoError(cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	dir, err := limitCPU("test-"+strconv.Itoa(pid), pid, 250)
	if errors.Is(err, ErrCPULimit) && !isCgroupDir(dir) {
		t.Skipf("no cgroup cpu controller here: %v", err)
	}
	require.NoError(err)
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	require.NoError(err)
	require.Contains(strings.Fields(string(procs)), strconv.Itoa(pid))
	if quota, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us")); err == nil {
		require.Equal("25000", strings.TrimSpace(string(quota)), "250 thousandths of a 100 ms period")
	} else {
		max, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		require.NoError(err)
		require.Equal("25000 100000", strings.TrimSpace(string(max)))
	}

	require.NoError(cmd.Process.Kill())
	_ = cmd.Wait()
	releaseCPU(dir)
	_, err = os.Stat(dir)
	require.True(os.IsNotExist(err), "the group is removed once empty")
}

func isCgroupDir(dir string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(dir)
	return err == nil
}

func TestLimitCPURefusesNegative(t *testing.T) {
	cfg := DefaultConfig(os.Args[0], t.TempDir(), ModeRaft)
	cfg.MasterMilliCPUs = -1
	require.ErrorIs(t, cfg.verify(), ErrCPULimit)
}
