//go:build e2e

package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
	"github.com/s-chain/schain/vm"
)

// A fault is one kind of fault the nemesis injects into one validator at a
// time. This is the extension point for the kinds issue 46 lists and this
// run does not inject yet (partitions and lossy links between namespace
// hosts, clock skew with faketime, a Byzantine validator from the
// adversary harness, owner changes, cutover and rollback, kills of
// filers): implement fault and add it to faultKinds.
type fault interface {
	// name is the kind's name in the summary.
	name() string
	// hold draws how long the fault lasts, from the schedule's generator.
	hold(rng *rand.Rand) time.Duration
	// inject starts the fault on victim and returns what heals it.
	inject(ctx context.Context, n *nemesis, victim localnet.Node) (heal func(context.Context) error, err error)
}

// faultKinds are the kinds the schedule draws from.
var faultKinds = []fault{killRestart{}, pauseNode{}, pauseChain{}}

// maxPause bounds a SIGSTOP: avalanchego shuts a chain down when its
// plugin answers no keepalive for 40 s, so a longer stop is a crash, not a
// pause. A paused process is continued after maxPause by a timer even if
// the schedule's heal never runs.
const maxPause = 20 * time.Second

// recoverWithin bounds the wait, after a heal, until every validator is a
// member again and every node answers reads: the next fault waits for it,
// so that never more than one validator is faulty.
const recoverWithin = 3 * time.Minute

// nemesis injects a seeded schedule of faults, one validator at a time.
type nemesis struct {
	t   *testing.T
	net *localnet.Network
	rng *rand.Rand
	// clock is the history's: each fault's times are logged on it.
	clock func() int64

	mu     sync.Mutex
	counts map[string]int
	errs   []error
	events []string
	// paused are the processes stopped now, each with its safety timer.
	paused map[int]*time.Timer
}

func newNemesis(t *testing.T, n *localnet.Network, seed uint64, clock func() int64) *nemesis {
	nm := &nemesis{t: t, net: n, rng: rand.New(rand.NewPCG(seed, 0x6e656d65)), clock: clock, counts: map[string]int{}, paused: map[int]*time.Timer{}}
	// However the test ends, no node stays stopped: the network's
	// teardown could not stop it otherwise.
	t.Cleanup(nm.resumeAll)
	return nm
}

// step is one drawn entry of the schedule.
type step struct {
	gap    time.Duration
	kind   fault
	victim int
	hold   time.Duration
}

// next draws the schedule's next step: the same seed draws the same steps.
func (nm *nemesis) next() step {
	s := step{gap: 5*time.Second + time.Duration(nm.rng.Int64N(int64(10*time.Second)))}
	s.kind = faultKinds[nm.rng.IntN(len(faultKinds))]
	s.victim = nm.rng.IntN(len(nm.net.Nodes))
	s.hold = s.kind.hold(nm.rng)
	return s
}

// run injects faults until ctx ends, then heals the one in force.
func (nm *nemesis) run(ctx context.Context) {
	for {
		s := nm.next()
		if !sleepCtx(ctx, s.gap) {
			return
		}
		victim := nm.net.Nodes[s.victim]
		heal, err := s.kind.inject(ctx, nm, victim)
		if err != nil {
			nm.fail(fmt.Errorf("injecting %s into %s: %w", s.kind.name(), victim.NodeID, err))
			return
		}
		nm.mu.Lock()
		nm.counts[s.kind.name()]++
		nm.mu.Unlock()
		nm.event("%s of %s for %v", s.kind.name(), victim.NodeID, s.hold.Round(time.Millisecond))
		sleepCtx(ctx, s.hold)
		healCtx, cancel := context.WithTimeout(context.Background(), recoverWithin)
		err = heal(healCtx)
		cancel()
		if err != nil {
			nm.fail(fmt.Errorf("healing %s of %s: %w", s.kind.name(), victim.NodeID, err))
			return
		}
		nm.event("healed %s of %s", s.kind.name(), victim.NodeID)
		if err := nm.recovered(ctx); err != nil {
			if ctx.Err() == nil {
				nm.fail(fmt.Errorf("after %s of %s: %w", s.kind.name(), victim.NodeID, err))
			}
			return
		}
		nm.event("recovered: every node answers and has every validator as a member")
	}
}

// recovered waits until every node answers reads and every node's
// membership has every validator as a member.
func (nm *nemesis) recovered(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	for _, nd := range nm.net.Nodes {
		c, err := nodeClient(nd)
		if err != nil {
			return err
		}
		err = localnettest.Poll(ctx, func() error {
			n, err := c.GetNode(ctx)
			if err != nil {
				return err
			}
			if n.NotReady != "" {
				return fmt.Errorf("%s answers reads NotReady (%s)", nd.NodeID, n.NotReady)
			}
			m, err := c.GetMembership(ctx)
			if err != nil {
				return err
			}
			if len(m.Members) != len(nm.net.Nodes) {
				return fmt.Errorf("%s has %d members of %d validators", nd.NodeID, len(m.Members), len(nm.net.Nodes))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("the network did not recover within %v: %w", recoverWithin, err)
		}
	}
	return nil
}

// event logs what the nemesis did, with the time on the history's clock
// and the wall clock (the nodes' logs).
func (nm *nemesis) event(format string, args ...any) {
	line := fmt.Sprintf("t=%.3f s (%s) %s", float64(nm.clock())/1e9, time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	nm.t.Logf("nemesis: %s", line)
	nm.mu.Lock()
	defer nm.mu.Unlock()
	nm.events = append(nm.events, line)
}

// log is every event so far.
func (nm *nemesis) log() []string {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return append([]string(nil), nm.events...)
}

func (nm *nemesis) fail(err error) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	nm.errs = append(nm.errs, err)
}

// summary is the faults injected by kind, in kind order.
func (nm *nemesis) summary() string {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	var parts []string
	total := 0
	for _, k := range faultKinds {
		parts = append(parts, fmt.Sprintf("%s: %d", k.name(), nm.counts[k.name()]))
		total += nm.counts[k.name()]
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d faults (%s)", total, strings.Join(parts, ", "))
}

func (nm *nemesis) errors() []error {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return append([]error(nil), nm.errs...)
}

// stop sends SIGSTOP to pid and arms the timer that continues it after
// maxPause whatever happens.
func (nm *nemesis) stop(pid int) error {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP to pid %d: %w", pid, err)
	}
	nm.paused[pid] = time.AfterFunc(maxPause, func() { _ = nm.cont(pid) })
	return nil
}

// cont sends SIGCONT to pid if it is stopped.
func (nm *nemesis) cont(pid int) error {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	timer, ok := nm.paused[pid]
	if !ok {
		return nil
	}
	timer.Stop()
	delete(nm.paused, pid)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGCONT to pid %d: %w", pid, err)
	}
	return nil
}

// resumeAll continues every stopped process.
func (nm *nemesis) resumeAll() {
	nm.mu.Lock()
	pids := make([]int, 0, len(nm.paused))
	for pid := range nm.paused {
		pids = append(pids, pid)
	}
	nm.mu.Unlock()
	for _, pid := range pids {
		if err := nm.cont(pid); err != nil {
			nm.t.Logf("nemesis: %v", err)
		}
	}
}

// killRestart is kill -9 of a validator's node process (its plugin dies
// with it), then its restart from its data directory.
type killRestart struct{}

func (killRestart) name() string { return "kill -9 and restart" }

func (killRestart) hold(rng *rand.Rand) time.Duration {
	return 5*time.Second + time.Duration(rng.Int64N(int64(15*time.Second)))
}

func (killRestart) inject(ctx context.Context, nm *nemesis, victim localnet.Node) (func(context.Context) error, error) {
	if err := nm.net.KillNode(ctx, victim.NodeID); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return nm.net.StartNode(ctx, victim.NodeID) }, nil
}

// pauseNode is SIGSTOP of a validator's node process (avalanchego: its
// consensus, P-chain and HTTP API freeze; the plugin waits on it), then
// SIGCONT.
type pauseNode struct{}

func (pauseNode) name() string { return "SIGSTOP node" }

func (pauseNode) hold(rng *rand.Rand) time.Duration {
	return 3*time.Second + time.Duration(rng.Int64N(int64(9*time.Second)))
}

func (pauseNode) inject(_ context.Context, nm *nemesis, victim localnet.Node) (func(context.Context) error, error) {
	pid := victim.PID
	if pid == 0 {
		return nil, fmt.Errorf("no pid known for %s", victim.NodeID)
	}
	if err := nm.stop(pid); err != nil {
		return nil, err
	}
	return func(context.Context) error { return nm.cont(pid) }, nil
}

// pauseChain is SIGSTOP of a validator's S-Chain plugin process (the node
// and its P-chain keep running; S-Chain's engine and API stall), then
// SIGCONT.
type pauseChain struct{}

func (pauseChain) name() string { return "SIGSTOP chain" }

func (pauseChain) hold(rng *rand.Rand) time.Duration {
	return 3*time.Second + time.Duration(rng.Int64N(int64(9*time.Second)))
}

func (pauseChain) inject(_ context.Context, nm *nemesis, victim localnet.Node) (func(context.Context) error, error) {
	pid, err := pluginPID(victim)
	if err != nil {
		return nil, err
	}
	if err := nm.stop(pid); err != nil {
		return nil, err
	}
	return func(context.Context) error { return nm.cont(pid) }, nil
}

var errNoPlugin = errors.New("no S-Chain plugin process")

// pluginPID finds the S-Chain plugin process among the node process's
// children.
func pluginPID(nd localnet.Node) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	parent := strconv.Itoa(nd.PID)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold anything, so read
		// after its closing parenthesis.
		rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(rest) < 2 || rest[1] != parent {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), vm.ID.String()) {
			return strconv.Atoi(e.Name())
		}
	}
	return 0, fmt.Errorf("%w under node %s (pid %d)", errNoPlugin, nd.NodeID, nd.PID)
}

// sleepCtx waits d (a schedule's timer, not a wait on a condition) and
// reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
