package benchmark

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	require := require.New(t)
	// A command name with a space and a parenthesis, as a plugin's could be.
	line := "4242 (avalanche go) x) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 12 0 100 0 345\n"
	st, err := parseStat([]byte(line))
	require.NoError(err)
	require.Equal(17, st.ppid)
	require.Equal(uint64(281), st.ticks, "utime 250 + stime 31")
	require.Equal(uint64(345), st.rssPages, "field 24")
	_, err = parseStat([]byte("4242 no name"))
	require.Error(err)
	_, err = parseStat([]byte("4242 (short) S 1 2"))
	require.Error(err)
}

// TestProcessTreeCPUCountsDescendants: the CPU of a process's children's
// children is counted (a node's plugin is its child), and a process tree
// that burns CPU shows it within a deadline.
func TestProcessTreeCPUCountsDescendants(t *testing.T) {
	require := require.New(t)
	// sh waits on a busy grandchild; sh itself uses next to no CPU.
	cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	start, err := processTreeCPU([]int{cmd.Process.Pid})
	require.NoError(err)
	alone, err := ProcessesAlone{cmd.Process.Pid}.CPUTime(context.Background())
	require.NoError(err)
	require.Eventually(func() bool {
		used, err := processTreeCPU([]int{cmd.Process.Pid})
		return err == nil && used-start >= 300*time.Millisecond
	}, 30*time.Second, 20*time.Millisecond, "the busy grandchild's CPU is counted")
	after, err := ProcessesAlone{cmd.Process.Pid}.CPUTime(context.Background())
	require.NoError(err)
	require.Less(after.Used-alone.Used, 100*time.Millisecond, "alone, the waiting sh: not its busy descendant")
	_, err = ProcessesAlone{1 << 30}.CPUTime(context.Background())
	require.ErrorContains(err, "does not run")
	st, err := readStat(cmd.Process.Pid)
	require.NoError(err)
	require.Equal(os.Getpid(), st.ppid)
	u, err := ProcessTreeUse(cmd.Process.Pid)
	require.NoError(err)
	require.GreaterOrEqual(u.Processes, 2, "sh and its busy child")
	require.Positive(u.RSS)

	_, err = processTreeCPU([]int{1 << 30})
	require.ErrorContains(err, "does not run")
	_, err = processTreeCPU([]int{cmd.Process.Pid, 1 << 30})
	require.ErrorContains(err, "does not run", "one root gone makes the reading unusable, not smaller")
}

func TestParseMachineBusy(t *testing.T) {
	require := require.New(t)
	// user nice system idle iowait irq softirq steal guest guest_nice
	raw := "cpu  100 2 30 5000 40 5 6 7 11 0\ncpu0 50 1 15 2500 20 2 3 3 5 0\n"
	busy, err := parseMachineBusy([]byte(raw))
	require.NoError(err)
	require.Equal(150*time.Second/clockTicks, busy, "user+nice+system+irq+softirq+steal, not idle, iowait or guest")
	_, err = parseMachineBusy([]byte("cpu0 1 2 3 4 5 6 7 8\n"))
	require.Error(err, "the first line must be the machine's total")
	_, err = parseMachineBusy([]byte("cpu 1 2 x 4 5 6 7 8\n"))
	require.Error(err)
	// The machine's busy time grows while this test's process burns CPU.
	before, err := machineBusy()
	require.NoError(err)
	require.Eventually(func() bool {
		for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); {
		}
		now, err := machineBusy()
		return err == nil && now-before >= 50*time.Millisecond
	}, 30*time.Second, time.Millisecond)
}
