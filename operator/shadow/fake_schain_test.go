package shadow

import (
	"context"
	"fmt"
	"sync"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var _ SChain = (*fakeSChain)(nil)

// fakeSChain is a correct S-Chain: per range, base = max(counter, floor) and
// counter = base+count, counters starting at 1.
type fakeSChain struct {
	mu      sync.Mutex
	counter map[string]uint64
	issued  map[string][]SChainResult
	tx      uint64
}

func newFakeSChain() *fakeSChain {
	return &fakeSChain{counter: map[string]uint64{}, issued: map[string][]SChainResult{}}
}

func (f *fakeSChain) Allocate(ctx context.Context, rangeKey string, count, floor uint64) (SChainResult, error) {
	if err := ctx.Err(); err != nil {
		return SChainResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	base := max(f.counter[rangeKey], floor, 1)
	f.counter[rangeKey] = base + count
	f.tx++
	res := SChainResult{Base: base, Count: count, TxID: fmt.Sprintf("tx%d", f.tx), PChainHeight: 1, Owner: "v0"}
	f.issued[rangeKey] = append(f.issued[rangeKey], res)
	return res, nil
}

var _ legacy.Allocator = (*recordingLegacy)(nil)

// recordingLegacy remembers every id the legacy allocator issued, so tests
// can check cutover against ground truth rather than the comparator's view.
type recordingLegacy struct {
	legacy.Allocator
	mu     sync.Mutex
	issued []legacy.Result
}

func (r *recordingLegacy) Allocate(ctx context.Context, rangeKey string, count uint64) (legacy.Result, error) {
	res, err := r.Allocator.Allocate(ctx, rangeKey, count)
	if err == nil {
		r.mu.Lock()
		r.issued = append(r.issued, res)
		r.mu.Unlock()
	}
	return res, err
}

func (r *recordingLegacy) results() []legacy.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]legacy.Result(nil), r.issued...)
}
