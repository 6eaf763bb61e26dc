//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"
)

// gapProbe allocates on ranges in closed loops and measures, per range,
// the longest time without a successful allocation: a block gap shows on
// every range at once, whatever its owner.
type gapProbe struct {
	alloc func(ctx context.Context, rk string, count uint64) (ids.NodeID, error)

	mu      sync.Mutex
	from    time.Time                // guarded by mu: start of the window
	last    map[string]time.Time     // guarded by mu: last success per range
	longest map[string]time.Duration // guarded by mu: within the window
	count   map[string]int           // guarded by mu: successes in the window
	failed  map[string][]string      // guarded by mu: errors in the window (the first few)

	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// startGapProbe starts one closed-loop client per range; stop ends them.
func startGapProbe(ctx context.Context, ranges []string, alloc func(context.Context, string, uint64) (ids.NodeID, error)) *gapProbe {
	p := &gapProbe{alloc: alloc}
	p.window(ranges)
	ctx, p.cancel = context.WithCancel(ctx)
	for _, rk := range ranges {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for ctx.Err() == nil {
				// A bounded attempt: a stuck request shows as a gap, not a hang.
				actx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := p.alloc(actx, rk, 1)
				cancel()
				if err == nil {
					p.success(rk, time.Now())
				} else if ctx.Err() == nil {
					p.failure(rk, err)
				}
			}
		}()
	}
	return p
}

// window starts a new measurement window on ranges.
func (p *gapProbe) window(ranges []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.from = now
	p.last, p.longest, p.count, p.failed = map[string]time.Time{}, map[string]time.Duration{}, map[string]int{}, map[string][]string{}
	for _, rk := range ranges {
		p.last[rk] = now
	}
}

func (p *gapProbe) success(rk string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.last[rk]; ok {
		p.longest[rk] = max(p.longest[rk], at.Sub(prev))
		p.last[rk] = at
		p.count[rk]++
	}
}

func (p *gapProbe) failure(rk string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failed[rk]) < 3 {
		p.failed[rk] = append(p.failed[rk], fmt.Sprintf("%s: %v", time.Since(p.from).Round(time.Millisecond), err))
	}
}

// gapStats is one range's window: its longest gap (counting the one still
// open at the end) and its successful allocations.
type gapStats struct {
	Longest time.Duration
	Count   int
	Errors  []string
}

// read closes the window now.
func (p *gapProbe) read() (time.Duration, map[string]gapStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	out := map[string]gapStats{}
	for rk, last := range p.last {
		out[rk] = gapStats{Longest: max(p.longest[rk], now.Sub(last)), Count: p.count[rk], Errors: p.failed[rk]}
	}
	return now.Sub(p.from), out
}

func (p *gapProbe) stop() {
	p.cancel()
	p.wg.Wait()
}

// longestOf is the longest gap of a window over all ranges.
func longestOf(stats map[string]gapStats) time.Duration {
	var d time.Duration
	for _, s := range stats {
		d = max(d, s.Longest)
	}
	return d
}

func describeGaps(stats map[string]gapStats) string {
	var parts []string
	for rk, s := range stats {
		part := fmt.Sprintf("%s: longest %s over %d allocations", rk, s.Longest.Round(time.Millisecond), s.Count)
		if len(s.Errors) > 0 {
			part += fmt.Sprintf(" (errors, from the window's start: %s)", strings.Join(s.Errors, "; "))
		}
		parts = append(parts, part)
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// schainCLI runs the built schain binary against the e2e network through
// the given nodes, and returns its exit code and output.
func schainCLI(ctx context.Context, t *testing.T, uris []string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(buildDir(), "schain"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s missing: run make build (%v)", bin, err)
	}
	full := append([]string{"--rpc", strings.Join(uris, ","), "--chain", network.ChainID.String()}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("running schain %v: %v", args, err)
	return -1, "", ""
}
