package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// stale reports whether tx can never be included once the membership with
// fingerprint is in force at (pChainHeight, round): block P-chain heights
// and liveness epochs never go down, and a membership's fingerprint covers
// its generation, so a transaction pinned to an older height, an older
// membership of this height, or (a heartbeat) an older liveness epoch is
// dead.
func stale(tx *txs.Tx, pChainHeight, round uint64, fingerprint ids.ID) bool {
	h := tx.Unsigned.Head()
	switch {
	case h.Epoch != pChainHeight:
		return h.Epoch < pChainHeight
	case tx.IsHeartbeat():
		return tx.Unsigned.(*txs.HeartbeatTx).Round < round
	default:
		return h.Fingerprint != fingerprint
	}
}

// repinStale runs after a block that put membership e in force is accepted
// (or after a build skipped stale work). Pending transactions that can never
// be included any more leave the pool. This node's own allocations and
// manifests are re-signed for the current epoch where it still owns every
// range: a clean retry, never a double write, because the old one is now
// dead. Otherwise their receipt says the owner changed and names the new
// owner. Heartbeats are not re-signed: the heartbeat loop sends the current
// one. Called with vm.mu held; signing happens in the background.
func (vm *VM) repinStale(e *execute.Epoch) {
	var own []*txs.Tx
	for _, tx := range vm.mempool.Peek(vm.genesis.Mempool.MaxTxs, vm.genesis.Mempool.MaxBytes) {
		if !stale(tx, e.Height(), e.Round(), e.Fingerprint()) {
			continue
		}
		vm.mempool.Remove(tx.ID())
		if tx.Unsigned.Head().Owner == vm.cfg.NodeID && !tx.IsHeartbeat() {
			own = append(own, tx)
		}
	}
	if len(own) == 0 {
		return
	}
	vm.background.Add(1)
	go func() {
		defer vm.background.Done()
		for _, old := range own {
			vm.repin(context.Background(), old)
		}
	}()
}

func (vm *VM) repin(ctx context.Context, old *txs.Tx) {
	tx, err := vm.signCurrent(ctx, func(h txs.Header) txs.Unsigned {
		switch u := old.Unsigned.(type) {
		case *txs.AllocateTx:
			return &txs.AllocateTx{Header: h, Entries: u.Entries}
		case *txs.PutManifestTx:
			return &txs.PutManifestTx{Header: h, Entries: u.Entries}
		default:
			panic(fmt.Sprintf("re-pinning a %T", u))
		}
	}, old.Unsigned.Ranges())
	if err == nil {
		err = vm.SubmitTx(tx)
	}
	var noe *execute.NotOwnerError
	switch {
	case err == nil:
		vm.tracker.replace(old.ID(), tx.ID())
	case errors.As(err, &noe):
		vm.tracker.reject(old.ID(), fmt.Sprintf("rejected: owner changed: range %q is owned by %s in epoch %d", noe.Range, noe.Owner, noe.Epoch))
	default:
		vm.tracker.reject(old.ID(), fmt.Sprintf("rejected: re-pinning failed: %v", err))
	}
}
