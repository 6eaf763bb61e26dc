package shadow

import "context"

// SChain is the S-Chain allocation API as the shadow consumes it; the real
// implementation is the S-Chain JSON-RPC client. Implementations must be safe
// for concurrent use.
//
// Allocate returns count ids [Base, Base+Count) for rangeKey with Base >=
// floor: the counter only moves up, which is how cutover starts a range
// above every id the legacy allocator ever issued.
type SChain interface {
	Allocate(ctx context.Context, rangeKey string, count, floor uint64) (SChainResult, error)
}

// SChainResult is one accepted S-Chain allocation.
type SChainResult struct {
	Base         uint64 `json:"base"`
	Count        uint64 `json:"count"`
	TxID         string `json:"tx_id"`
	PChainHeight uint64 `json:"pchain_height"`
	Owner        string `json:"owner"`
}

// End returns the first id after the allocation.
func (r SChainResult) End() uint64 { return r.Base + r.Count }
