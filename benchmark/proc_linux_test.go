package benchmark

import (
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
	require.Eventually(func() bool {
		used, err := processTreeCPU([]int{cmd.Process.Pid})
		return err == nil && used-start >= 100*time.Millisecond
	}, 30*time.Second, 20*time.Millisecond, "the busy grandchild's CPU is counted")
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
