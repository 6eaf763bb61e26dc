// Package benchmarktest provides an in-process fake benchmark.Cluster, so
// that the load generator, the runner and the bench command are tested
// without starting processes or a network.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package benchmarktest

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/s-chain/schain/tools/benchmark"
)

var _ benchmark.Cluster = (*Fake)(nil)

// ErrDown is the answer for a range whose node was killed.
var ErrDown = errors.New("benchmarktest: the range's node is down")

// Fake is a cluster of named nodes; each range belongs to one node
// (CRC32(range) mod nodes) and has its own counter. Killing a node makes its
// ranges fail until the end. It is safe for concurrent use.
type Fake struct {
	nodes   []string
	latency time.Duration
	// reissue makes a kill reset every counter to zero, the way a legacy
	// leader with an in-memory sequencer restarts low.
	reissue bool

	mu       sync.Mutex
	counters map[string]uint64 // guarded by mu
	dead     map[string]bool   // guarded by mu
	stopped  bool              // guarded by mu
}

// New returns a fake of n nodes named node1..nodeN answering after latency.
// With reissue, a kill resets the counters (ids are then issued twice).
func New(n int, latency time.Duration, reissue bool) *Fake {
	f := &Fake{latency: latency, reissue: reissue, counters: map[string]uint64{}, dead: map[string]bool{}}
	for i := range n {
		f.nodes = append(f.nodes, fmt.Sprintf("node%d", i+1))
	}
	return f
}

// Owner is the node that serves rangeKey.
func (f *Fake) Owner(rangeKey string) string {
	return f.nodes[crc32.ChecksumIEEE([]byte(rangeKey))%uint32(len(f.nodes))]
}

// Allocate implements benchmark.System.
func (f *Fake) Allocate(ctx context.Context, rangeKey string, count uint64) (uint64, uint64, error) {
	if f.latency > 0 {
		t := time.NewTimer(f.latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, 0, ctx.Err()
		case <-t.C:
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead[f.Owner(rangeKey)] {
		return 0, 0, fmt.Errorf("%w: %s", ErrDown, rangeKey)
	}
	first := f.counters[rangeKey]
	f.counters[rangeKey] = first + count
	return first, count, nil
}

// Owners implements benchmark.Cluster.
func (f *Fake) Owners(_ context.Context, ranges []string) ([]string, error) {
	out := make([]string, len(ranges))
	for i, rk := range ranges {
		out[i] = f.Owner(rk)
	}
	return out, nil
}

// Kill implements benchmark.Cluster.
func (f *Fake) Kill(_ context.Context, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead[node] = true
	if f.reissue {
		f.counters = map[string]uint64{}
	}
	return nil
}

// Stop implements benchmark.Cluster.
func (f *Fake) Stop(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	return nil
}

// Stopped reports whether Stop was called.
func (f *Fake) Stopped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}
