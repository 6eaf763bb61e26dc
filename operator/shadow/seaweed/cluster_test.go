package seaweed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
	"github.com/s-chain/schain/tests/framework/ports"
)

// clusterBudget bounds the whole real-cluster test: start-up, allocation,
// failover (about 10 s election + 15 s warm-up with the master's defaults).
const clusterBudget = 150 * time.Second

// weedBinary returns build/weed under the repository root, found by walking
// up from the test's working directory to go.mod.
func weedBinary(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("build/weed not found: run `make weed` to build the SeaweedFS binary for this test")
		}
		dir = parent
	}
	bin := filepath.Join(dir, "build", "weed")
	if _, err := os.Stat(bin); err != nil {
		t.Skip("build/weed not found: run `make weed` to build the SeaweedFS binary for this test")
	}
	return bin
}

// weedProc is one weed process; kill is idempotent and waits for the exit.
type weedProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	once sync.Once
}

func (p *weedProc) kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
}

// tail returns the last n lines of the process's log.
func (p *weedProc) tail(n int) string {
	f, err := os.Open(p.log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// startWeed starts `weed args...`, logging to a file, and kills it in
// t.Cleanup whatever happens; on failure the log's tail is printed.
func startWeed(t *testing.T, bin, name string, args ...string) *weedProc {
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithParent(cmd)
	require.NoError(t, cmd.Start())
	_ = logFile.Close() // the child holds its own descriptor
	p := &weedProc{name: name, cmd: cmd, log: logPath}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- %s (%s) log tail ---\n%s", name, strings.Join(args, " "), p.tail(25))
		}
	})
	return p
}

// freePorts picks n distinct free 127.0.0.1 ports for weed processes.
func freePorts(t *testing.T, n int) []int {
	got, err := ports.Free(n)
	require.NoError(t, err)
	return got
}

// hasFlag reports whether `weed <cmd> -h` documents -flag.
func hasFlag(t *testing.T, bin, cmd, flag string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, cmd, "-h").CombinedOutput() // exits 2 after printing help
	return strings.Contains(string(out), "-"+flag+" ") || strings.Contains(string(out), "-"+flag+"\n") || strings.Contains(string(out), "-"+flag+"=")
}

// eventually polls cond every interval until it holds or ctx ends.
func eventually(ctx context.Context, interval time.Duration, cond func() bool) bool {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// schainCounter stands in for S-Chain: a correct per-range counter.
type schainCounter map[string]uint64

func (s schainCounter) allocate(rangeKey string, count uint64) shadow.SChainResult {
	base := max(s[rangeKey], 1)
	s[rangeKey] = base + count
	return shadow.SChainResult{Base: base, Count: count, TxID: "local", PChainHeight: 1, Owner: "local"}
}

// TestRealClusterReissuesUnwrittenKeysAfterFailover runs 3 SeaweedFS
// masters and a volume server on 127.0.0.1, allocates through the adapter
// without writing anything, SIGKILLs the leader and keeps allocating through
// the outage. It checks ARCHITECTURE.md §5 on the real binary: the failover
// shows as unavailability and then a new leader, and the new leader's
// sequencer reissues keys the old one assigned (never written, so no volume
// heartbeat raised it), which the comparator classifies as legacy_reissue.
func TestRealClusterReissuesUnwrittenKeysAfterFailover(t *testing.T) {
	bin := weedBinary(t)
	if testing.Short() {
		t.Skip("starts a real SeaweedFS cluster (about a minute)")
	}
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), clusterBudget)
	defer cancel()

	// Masters get explicit gRPC ports, named in -peers as ip:port.grpcPort.
	ports := freePorts(t, 8)
	var peers, httpAddrs []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("127.0.0.1:%d.%d", ports[2*i], ports[2*i+1]))
		httpAddrs = append(httpAddrs, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
	}
	telemetry := hasFlag(t, bin, "master", "telemetry")
	t.Logf("weed master -telemetry flag present: %v", telemetry)
	masters := make(map[string]*weedProc)
	for i := range 3 {
		args := []string{
			"master", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
			"-port=" + strconv.Itoa(ports[2*i]), "-port.grpc=" + strconv.Itoa(ports[2*i+1]),
			"-mdir=" + t.TempDir(), "-peers=" + strings.Join(peers, ","),
			"-volumeSizeLimitMB=64", "-defaultReplication=000",
		}
		if telemetry {
			args = append(args, "-telemetry=false")
		}
		masters[httpAddrs[i]] = startWeed(t, bin, fmt.Sprintf("master%d", i), args...)
	}

	cfg := DefaultConfig(httpAddrs...)
	cfg.RequestTimeout = 3 * time.Second
	cfg.DialTimeout = 500 * time.Millisecond
	cfg.LeaderRefresh = 500 * time.Millisecond
	c, err := New(cfg)
	require.NoError(err)
	defer c.Close()

	agreedLeader := func(alive []string) string {
		var leader string
		for _, addr := range alive {
			sctx, scancel := context.WithTimeout(ctx, time.Second)
			st, err := c.Status(sctx, addr)
			scancel()
			if err != nil || st.Leader == "" || (leader != "" && st.Leader != leader) {
				return ""
			}
			leader = st.Leader
		}
		return leader
	}
	start := time.Now()
	var leader string
	require.True(eventually(ctx, 200*time.Millisecond, func() bool {
		leader = agreedLeader(httpAddrs)
		return leader != ""
	}), "no leader agreed by all three masters")
	t.Logf("leader %s elected after %v", leader, time.Since(start).Round(time.Millisecond))

	masterArg := strings.Join(peers, ",")
	startWeed(t, bin, "volume", "volume", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-port="+strconv.Itoa(ports[6]), "-port.grpc="+strconv.Itoa(ports[7]),
		"-dir="+t.TempDir(), "-max=32", "-master="+masterArg)

	comp, err := shadow.NewComparator(shadow.Config{
		MaxIntervalsPerRange: 1024, MaxRanges: 16, MaxExamples: 5, LegacySharedKeySpace: true,
		Gate: shadow.GateConfig{MinRequests: 1},
	})
	require.NoError(err)
	sc := schainCounter{}
	ranges := []string{"shadow-a", "shadow-b/band-1"}
	var seq uint64
	// exchange allocates once through the adapter and feeds the comparator.
	exchange := func(rangeKey string) (legacy.Result, error) {
		seq++
		const count = 10
		t0 := time.Now()
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := c.Allocate(actx, rangeKey, count)
		acancel()
		obs := shadow.Observation{
			Request: shadow.Request{Seq: seq, Range: rangeKey, Count: count},
			At:      time.Now(),
			Legacy:  shadow.LegacySide{Result: res, Err: err, Latency: time.Since(t0)},
			SChain:  shadow.SChainSide{Result: sc.allocate(rangeKey, count)},
		}
		comp.Observe(obs)
		return res, err
	}

	// The first assign of each collection grows its volumes.
	for _, r := range ranges {
		require.True(eventually(ctx, 250*time.Millisecond, func() bool {
			_, err := exchange(r)
			return err == nil
		}), "no successful assign for %s before the deadline", r)
	}
	var before []legacy.Result
	for i := range 20 {
		res, err := exchange(ranges[i%len(ranges)])
		require.NoError(err)
		before = append(before, res)
	}
	oldLeader, oldTerm := c.Leader()
	require.Equal(leader, oldLeader)
	for _, res := range before {
		require.Equal(oldTerm, res.Term)
		require.Equal(oldLeader, res.Leader)
	}
	t.Logf("before failover: leader %s term %d, keys [%d, %d)", oldLeader, oldTerm, before[0].First, before[len(before)-1].End())

	// Crash the leader.
	killedAt := time.Now()
	masters[oldLeader].kill()
	var alive []string
	for _, a := range httpAddrs {
		if a != oldLeader {
			alive = append(alive, a)
		}
	}

	var unavailable, rejected int
	var firstUnavailable, lastUnavailable string
	var after legacy.Result
	require.True(eventually(ctx, 100*time.Millisecond, func() bool {
		res, err := exchange(ranges[0])
		switch {
		case err == nil && res.Term > oldTerm:
			after = res
			return true
		case errors.Is(err, legacy.ErrUnavailable):
			unavailable++
			lastUnavailable = err.Error()
			if firstUnavailable == "" {
				firstUnavailable = lastUnavailable
			}
		case err != nil:
			rejected++
			t.Logf("rejected during failover: %v", err)
		}
		return false
	}), "no assign from a new leader within the budget (%d unavailable answers, last: %s)", unavailable, lastUnavailable)
	failover := time.Since(killedAt)
	newLeader, newTerm := c.Leader()
	t.Logf("failover: %v to first assign from new leader %s (term %d); %d unavailable answers, first: %.200s; last: %.200s",
		failover.Round(time.Millisecond), newLeader, newTerm, unavailable, firstUnavailable, lastUnavailable)
	require.NotEqual(oldLeader, newLeader)
	require.Contains(alive, newLeader)
	require.Equal(agreedLeader(alive), newLeader)
	require.Positive(unavailable, "the outage must show as unavailability")
	require.Zero(rejected, "nothing is rejected during failover")

	for i := range 10 {
		_, err := exchange(ranges[i%len(ranges)])
		require.NoError(err)
	}
	rep := comp.Report()
	t.Logf("after failover: first key %d (old leader had reached %d); findings %v", after.First, before[len(before)-1].End(), rep.Counts)
	t.Logf("legacy latency p50 %v p99 %v over %d answers", rep.Latency[shadow.SideLegacy].P50NS, rep.Latency[shadow.SideLegacy].P99NS, rep.Latency[shadow.SideLegacy].Count)

	// ARCHITECTURE.md §5: the new leader's sequencer restarts below the
	// keys the old one assigned, since none was written.
	require.Less(after.First, before[len(before)-1].End(), "new leader continued above the old leader's keys: §5 no longer holds on this version")
	require.Positive(rep.Counts[shadow.KindLegacyReissue], "the comparator must see the reissue")
	require.Zero(rep.Counts[shadow.KindLegacyDuplicate], "a reissue across leaders is not a same-term duplicate")
	require.Positive(rep.Counts[shadow.KindOutcomeMismatch], "the outage is a disagreement with S-Chain")
}
