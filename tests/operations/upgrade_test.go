//go:build e2e

package operations

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tests/framework/avanet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
	"github.com/s-chain/schain/tests/framework/ports"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/vm"
)

// upgradeFrom names the commit the rolling upgrade starts from.
const upgradeFrom = "upgrade-from"

// TestRollingUpgrade starts a chain on the plugin of the commit named in
// upgrade-from (built from a git worktree, cached under
// build/upgrade/<commit>), then replaces the plugin with this build node by
// node while clients allocate: no id is issued twice, every node holds the
// same block and state at the end, and the longest time a range went
// without an allocation is reported against the 5 s target.
//
// The chain is created with bytes the old plugin accepts: a genesis without
// `upgrades` (so this build runs it with every change of execution off,
// "never", exactly as the old one did) and a chain config of write tokens
// only.
func TestRollingUpgrade(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := localnettest.BuildDir()
	oldPlugin := buildOldPlugin(t, ctx, build)
	newPlugin := filepath.Join(build, "plugins", vm.ID.String())
	oldSum, newSum := fileSum(t, oldPlugin), fileSum(t, newPlugin)
	if oldSum == newSum {
		t.Logf("the old and the new plugin are the same binary: the upgrade changes nothing")
	}
	root := filepath.Join(build, "e2e-upgrade")
	require.NoError(os.RemoveAll(root))
	require.NoError(os.MkdirAll(root, 0o755))

	// Four nodes on loopback, each with its own plugin directory.
	const nodes = 4
	free, err := ports.Free(2 * nodes)
	require.NoError(err)
	var places []avanet.Place
	for i := range nodes {
		places = append(places, avanet.Place{Addr: netip.MustParseAddr("127.0.0.1"), HTTPPort: uint16(free[2*i]), StakingPort: uint16(free[2*i+1])})
	}
	an, err := avanet.Create(avanet.Config{
		Dir: filepath.Join(root, "nodes"), AvalancheGo: filepath.Join(build, "avalanchego"),
		PluginDir: filepath.Join(root, "plugins"), Places: places, Progress: testWriter{t},
	})
	require.NoError(err)
	for i, nd := range an.Nodes {
		dir := filepath.Join(root, "plugins", fmt.Sprintf("node%d", i+1))
		installPlugin(t, oldPlugin, dir)
		require.NoError(nd.SetFlag("plugin-dir", dir))
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer scancel()
		if t.Failed() {
			for _, nd := range an.Nodes {
				t.Logf("---- %s, logs in %s:\n%s", nd.URI, nd.LogDir(), nd.Tail(15))
			}
		}
		_ = an.Stop(sctx)
	})
	require.NoError(an.Start(ctx))
	genesis := fmt.Appendf(nil, `{"timestamp": %d, "roundDurationMs": 5000, "livenessRounds": 1, "txLifetimeRounds": 4}`, time.Now().UnixMilli())
	c := deployChain(t, ctx, root, an, genesis)

	rangeKeys := make([]string, 8)
	for i := range rangeKeys {
		rangeKeys[i] = fmt.Sprintf("upgrade-%02d", i)
	}
	load := benchmark.Start(ctx, benchmark.Load{
		System: committed{c.router}, Ranges: rangeKeys, Clients: len(rangeKeys), Pick: benchmark.PerRange(), Count: 4, Timeout: 30 * time.Second,
	})
	waitFor(t, 2*time.Minute, "every range to allocate on the old plugin", func() error {
		if n := load.Allocating(time.Minute); n < len(rangeKeys) {
			return fmt.Errorf("%d of %d ranges allocated", n, len(rangeKeys))
		}
		return nil
	})
	for _, nd := range an.Nodes {
		require.Equal(oldSum, runningPlugin(t, nd.PID()), "%s runs the old plugin", nd.URI)
	}
	upgradeAt := load.Since()
	for i, nd := range an.Nodes {
		began := time.Now()
		restartAt := load.Since()
		require.NoError(nd.Stop(ctx))
		installPlugin(t, newPlugin, filepath.Join(root, "plugins", fmt.Sprintf("node%d", i+1)))
		require.NoError(nd.Start())
		waitFor(t, 2*time.Minute, nd.URI+" to serve the chain on the new plugin", func() error {
			_, err := c.node(t, nd).GetNode(ctx)
			return err
		})
		require.Equal(newSum, runningPlugin(t, nd.PID()), "%s runs the new plugin", nd.URI)
		serving := time.Since(began)
		// Every range allocates again, its owner's included, before the
		// next node goes.
		waitFor(t, 2*time.Minute, "every range to allocate since node"+fmt.Sprint(i+1)+"'s restart", func() error {
			if n := load.Allocating(load.Since() - restartAt); n < len(rangeKeys) {
				return fmt.Errorf("%d of %d ranges allocated", n, len(rangeKeys))
			}
			return nil
		})
		c.agree(t, ctx, 2*time.Minute)
		t.Logf("node%d (%s) runs the new plugin: serving %v after its stop, every range allocated %v after it",
			i+1, nd.NodeID, serving.Round(10*time.Millisecond), time.Since(began).Round(10*time.Millisecond))
	}
	upgraded := load.Since()
	waitFor(t, 2*time.Minute, "every range to allocate on the new plugin", func() error {
		if n := load.Allocating(10 * time.Second); n < len(rangeKeys) {
			return fmt.Errorf("%d of %d ranges allocated in the last 10 s", n, len(rangeKeys))
		}
		return nil
	})
	samples, _ := load.Stop()

	dups := benchmark.FindDuplicates(benchmark.Intervals(samples, false))
	require.Positive(dups.Allocations)
	require.Zero(dups.Overlapping, "ids issued twice: %+v", dups.Examples)
	h, blk := c.agree(t, ctx, time.Minute)
	for i := range an.Nodes {
		require.Equal(newSum, fileSum(t, filepath.Join(root, "plugins", fmt.Sprintf("node%d", i+1), vm.ID.String())))
	}
	stall, longest := stalls(samples, len(rangeKeys), upgradeAt, upgraded)
	t.Logf("rolling upgrade from %s: %d allocations, none overlapping; every node holds block %s at height %d; longest stall of a range during the upgrade %v (target 5 s), longest single allocation %v",
		readUpgradeFrom(t), dups.Allocations, blk.ID, h, stall, longest)
	// A restarting owner's ranges wait for it (or for K+1 liveness rounds);
	// the bound here is that, and a regression beyond it fails.
	require.Less(stall, 30*time.Second, "a range stalled beyond a restart and a failover")
}

// stalls is the longest time, between from and to, a range went without a
// successful allocation, and the longest successful allocation.
func stalls(samples []benchmark.Sample, ranges int, from, to time.Duration) (time.Duration, time.Duration) {
	var stall, longest time.Duration
	for r := range ranges {
		var ends []time.Duration
		for _, s := range samples {
			if s.Range == r && !s.Failed {
				ends = append(ends, s.End)
				longest = max(longest, s.Latency())
			}
		}
		slices.Sort(ends)
		last := from
		for _, e := range ends {
			if e < from {
				continue
			}
			stall = max(stall, e-last)
			last = e
			if e > to {
				break
			}
		}
	}
	return stall, longest
}

// readUpgradeFrom is the commit named in upgrade-from.
func readUpgradeFrom(t *testing.T) string {
	t.Helper()
	f, err := os.Open(upgradeFrom)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	require.FailNow(t, upgradeFrom+" names no commit")
	return ""
}

// buildOldPlugin builds the plugin of the upgrade-from commit from a git
// worktree, once: the binary is kept in build/upgrade/<commit>/. A checkout
// without that commit (a shallow clone) skips the test, naming it.
func buildOldPlugin(t *testing.T, ctx context.Context, build string) string {
	t.Helper()
	commit := readUpgradeFrom(t)
	out := filepath.Join(build, "upgrade", commit, vm.ID.String())
	if _, err := os.Stat(out); err == nil {
		return out
	}
	repo := filepath.Join("..", "..")
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("rolling upgrade: this checkout lacks commit %s (named in tests/operations/%s; a shallow clone?): fetch it to include this test", commit, upgradeFrom)
	}
	src := filepath.Join(build, "upgrade", commit+"-src")
	_ = exec.Command("git", "-C", repo, "worktree", "remove", "--force", src).Run()
	run := func(dir, name string, args ...string) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, b)
	}
	run(repo, "git", "worktree", "add", "--detach", src, commit)
	defer run(repo, "git", "worktree", "remove", "--force", src)
	t.Logf("building the plugin of %s (cached in %s)", commit, out)
	run(src, "go", "build", "-o", out, "./plugin")
	b, err := exec.Command(out, "vm-id").Output()
	require.NoError(t, err)
	require.Equal(t, vm.ID.String(), strings.TrimSpace(string(b)), "the old plugin serves the same VM ID")
	return out
}

// installPlugin copies plugin into dir under the VM ID's name.
func installPlugin(t *testing.T, plugin, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	in, err := os.Open(plugin)
	require.NoError(t, err)
	defer in.Close()
	dst := filepath.Join(dir, vm.ID.String())
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	require.NoError(t, os.Rename(tmp, dst))
}

// runningPlugin is the digest of the binary the node's plugin process runs
// (its child started from the plugin directory): /proc/<pid>/exe is the
// running file even after the one in the directory was replaced.
func runningPlugin(t *testing.T, nodePID int) [32]byte {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat)[i+1:])
		if len(f) < 2 || f[1] != fmt.Sprint(nodePID) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && strings.Contains(exe, vm.ID.String()) {
			return fileSum(t, filepath.Join("/proc", e.Name(), "exe"))
		}
	}
	require.FailNow(t, "no plugin process under node", "pid %d", nodePID)
	return [32]byte{}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}
