// Package schainrpc is the S-Chain side of a shadow run: allocations sent to
// each range's owner through the JSON-RPC client, reported once accepted.
package schainrpc

import (
	"context"
	"fmt"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/shadow"
	"github.com/s-chain/schain/vm/api"
)

var _ shadow.SChain = (*Side)(nil)

// Side adapts a client.Router to shadow.SChain.
type Side struct{ r *client.Router }

// New wraps r.
func New(r *client.Router) *Side { return &Side{r: r} }

// Allocate submits to the range's owner and waits for acceptance (following
// a re-pin to its replacement), so the result carries the ids actually
// reserved.
func (s *Side) Allocate(ctx context.Context, rangeKey string, count, floor uint64) (shadow.SChainResult, error) {
	rep, err := s.r.Allocate(ctx, api.AllocateArgs{Range: rangeKey, Count: count, Floor: floor})
	if err != nil {
		return shadow.SChainResult{}, err
	}
	rc, err := s.r.WaitForReceipt(ctx, rep.TxID)
	if err != nil {
		return shadow.SChainResult{}, err
	}
	if rep.Index >= len(rc.Entries) {
		return shadow.SChainResult{}, fmt.Errorf("schainrpc: receipt of %s has %d entries, want index %d", rc.TxID, len(rc.Entries), rep.Index)
	}
	e := rc.Entries[rep.Index]
	return shadow.SChainResult{Base: e.Base, Count: e.Count, TxID: rc.TxID.String(), PChainHeight: rep.PChainHeight, Owner: rep.Owner.String()}, nil
}
