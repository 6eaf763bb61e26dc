package subnet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
)

// A certificate's P-chain height must not be below the height its chain was
// created at: subnet validators are added one transaction at a time, so at
// earlier heights one validator may hold all of the subnet's stake and
// certify an invented chain alone. The P-chain API names no height for a
// transaction, so the height is found by reading P-chain blocks downward:
// a chain's ID is its CreateChainTx's ID, and the block holding that
// transaction is the creation height.
var (
	// ErrNoChainBelow: no P-chain block at or below the height searched
	// from holds the chain's CreateChainTx: the chain did not exist there.
	ErrNoChainBelow = errors.New("subnet: the chain was not created at or below this P-chain height")
	// ErrCreationTooFar: the search read MaxCreationScan blocks without
	// reaching the chain's creation; name the height instead
	// (--chain-created-at, or a saved validator set).
	ErrCreationTooFar = errors.New("subnet: the chain's creation is further down the P-chain than the search reads")
)

const (
	// MaxCreationScan bounds the P-chain blocks one search reads.
	MaxCreationScan = 100_000
	// hintWindow is how far below a hint the search first looks.
	hintWindow = 256
	// scanBatch is how many blocks are read at once.
	scanBatch = 32
)

// ChainCreatedAt is the P-chain height of the block holding chainID's
// CreateChainTx, as node's P-chain has it, searched downward from top (a
// certificate's P-chain height: the chain must exist there). hint, if not
// zero, is where to look first (the P-chain height of the chain's first
// blocks, which anybody may claim: the transaction is in exactly one
// block, so a wrong hint costs a search, never a wrong answer).
func ChainCreatedAt(ctx context.Context, node Node, chainID ids.ID, top, hint uint64) (uint64, error) {
	if hint > 0 && hint <= top {
		if h, found, err := findCreation(ctx, node, chainID, max(hint, hintWindow)-hintWindow+1, hint); err != nil || found {
			return h, err
		}
	}
	low := uint64(1) // the chain cannot be in the genesis block of a subnet's P-chain
	if top >= MaxCreationScan {
		low = top - MaxCreationScan + 1
	}
	h, found, err := findCreation(ctx, node, chainID, max(low, 1), top)
	switch {
	case err != nil:
		return 0, err
	case found:
		return h, nil
	case low > 1:
		return 0, fmt.Errorf("%w: read P-chain blocks %d..%d", ErrCreationTooFar, low, top)
	}
	return 0, fmt.Errorf("%w: chain %s, P-chain height %d", ErrNoChainBelow, chainID, top)
}

// findCreation reads blocks top..low, newest first, a batch at a time, for
// the one holding chainID's CreateChainTx.
func findCreation(ctx context.Context, node Node, chainID ids.ID, low, top uint64) (uint64, bool, error) {
	if low == 0 {
		low = 1
	}
	for hi := top; hi >= low; {
		lo := max(low, hi-min(hi, scanBatch-1))
		holds := make([]bool, hi-lo+1)
		errs := make([]error, hi-lo+1)
		var wg sync.WaitGroup
		for h := lo; h <= hi; h++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holds[h-lo], errs[h-lo] = blockHolds(ctx, node, h, chainID)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, false, err
		}
		for i := len(holds) - 1; i >= 0; i-- {
			if holds[i] {
				return lo + uint64(i), true, nil
			}
		}
		if lo == low {
			break
		}
		hi = lo - 1
	}
	return 0, false, nil
}

// blockHolds reports whether P-chain block h holds the transaction txID.
func blockHolds(ctx context.Context, node Node, h uint64, txID ids.ID) (bool, error) {
	raw, err := node.GetBlockByHeight(ctx, h)
	if err != nil {
		return false, fmt.Errorf("platform.getBlockByHeight(%d): %w", h, err)
	}
	blk, err := block.Parse(block.Codec, raw)
	if err != nil {
		return false, fmt.Errorf("parsing P-chain block %d: %w", h, err)
	}
	for _, tx := range blk.Txs() {
		if tx.ID() == txID {
			return true, nil
		}
	}
	return false, nil
}
