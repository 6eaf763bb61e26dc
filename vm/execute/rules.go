package execute

import "github.com/s-chain/schain/errcode"

// ErrNotActivated: the transaction (or the request for it) needs a change
// of execution whose scheduled height the chain has not reached
// (config.Upgrades). Verify rejects such a transaction, the builder leaves
// it out, and the API answers NotReady with this reason.
var ErrNotActivated = errcode.New(errcode.NotReady, "not_activated", "execute: needs a change of execution not activated at this height")

// Rules says which scheduled changes of execution apply to one block
// (config.Upgrades, by the block's height). Every node derives them from the
// same schedule and height, so a change starts at the same block everywhere.
// A field is false until its change's height: the block executes exactly as
// the code before the change did.
type Rules struct {
	// LivenessGaps: the membership record keeps the rounds that had a block,
	// and a validator's grace counts only those (OpenMembership).
	LivenessGaps bool
	// Leases: lease transactions (txs.LeaseTx, kind 8) are valid, and write
	// the leases and fencing tokens of their ranges.
	Leases bool
	// Manifests: ManifestTx and ReclaimTx (versioned manifests with
	// preconditions, chunks bound to one live object, released lists)
	// replace PutManifestTx.
	Manifests bool
	// Removals: each new round's opening counts the rounds every
	// validator of the P-chain set has been out of the membership, and
	// decides the removal of those out for Liveness.Removal.Rounds
	// (state.Removal), as an L1's validator manager.
	Removals bool
}
