package benchmark_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tools/benchmark"
)

// gated answers each allocation when the test says so, and tells the test
// when one starts.
type gated struct {
	started chan struct{}
	answer  chan error
}

func (g gated) Allocate(ctx context.Context, _ string, count uint64) (uint64, uint64, error) {
	g.started <- struct{}{}
	select {
	case err := <-g.answer:
		return 1, count, err
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

func TestSucceededSinceCountsRequestsStartedAfter(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := gated{started: make(chan struct{}), answer: make(chan error)}
	d := benchmark.Start(ctx, benchmark.Load{System: g, Ranges: []string{"r"}, Clients: 1, Pick: benchmark.PerRange(), Count: 1, Timeout: time.Minute})
	defer d.Stop()

	<-g.started // a request in flight at the moment of interest...
	at := d.Since()
	g.answer <- nil // ...succeeds after it
	<-g.started     // the next request starts: the first one is recorded
	require.False(d.SucceededSince(0, at), "a request that started before at")
	g.answer <- nil
	<-g.started
	require.True(d.SucceededSince(0, at))
	require.False(d.SucceededSince(0, d.Since()+time.Hour))
}
