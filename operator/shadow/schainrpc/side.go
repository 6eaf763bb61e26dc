// Package schainrpc is the S-Chain side of a shadow run: allocations sent to
// each range's owner through the JSON-RPC client, reported once accepted.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package schainrpc

import (
	"context"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/shadow"
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
	c, err := s.r.AllocateCommitted(ctx, api.AllocateArgs{Range: rangeKey, Count: count, Floor: floor})
	if err != nil {
		return shadow.SChainResult{}, err
	}
	return shadow.SChainResult{Base: c.Entry.Base, Count: c.Entry.Count, TxID: c.Receipt.TxID.String(), PChainHeight: c.Reply.PChainHeight, Owner: c.Reply.Owner.String()}, nil
}
