package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// ErrBadGenesis wraps every problem found in the genesis JSON.
var ErrBadGenesis = errors.New("config: invalid genesis")

// Genesis holds the chain's parameters. Every field is consensus-relevant or
// a resource bound; all nodes of a chain start from the same bytes.
type Genesis struct {
	// Timestamp of the genesis block, unix milliseconds.
	Timestamp uint64 `json:"timestamp"`
	// TxLimits and BlockLimits are validity rules.
	TxLimits    txs.Limits   `json:"txLimits"`
	BlockLimits block.Limits `json:"blockLimits"`
	// Mempool bounds pending transactions per node.
	Mempool mempool.Config `json:"mempool"`
	// MaxTimeSkewMs bounds how far ahead of a verifier's clock a block's
	// timestamp may be. It is the timing assumption of liveness: honest
	// clocks differ by less, and a liveness round lasts at least
	// RoundsPerSkew times as long (see docs/concepts/liveness.md).
	MaxTimeSkewMs uint64 `json:"maxTimeSkewMs"`
	// ValidatorSetCache is how many P-chain validator sets (and
	// memberships) a node keeps.
	ValidatorSetCache int `json:"validatorSetCache"`
	// SignatureCache is how many verified tx signatures a node remembers.
	SignatureCache int `json:"signatureCache"`
	// GroupCommitWindowMs is how long the owner collects concurrent
	// allocate requests before signing them as one transaction.
	GroupCommitWindowMs uint64 `json:"groupCommitWindowMs"`
	// GroupCommitReturnMs is how long, from its first request, a group
	// may keep collecting past the window while it holds fewer requests
	// than the callers this owner answered since its last accept, or in
	// the period before it if more (0: never past the window).
	// Closed-loop clients send their next request when answered, so they
	// return in a burst after each accept; a group that waits for them
	// signs one transaction where the window alone signed several, and
	// every other validator verifies one signature instead of several. A
	// group closes as soon as they are in, so a lone client waits only the
	// window.
	GroupCommitReturnMs uint64 `json:"groupCommitReturnMs"`
	// GroupCommitMaxEntries bounds one group (at most txLimits.maxEntries).
	GroupCommitMaxEntries int `json:"groupCommitMaxEntries"`
	// MaxWaitMs bounds how long a "wait" request blocks.
	MaxWaitMs uint64 `json:"maxWaitMs"`
	// TrackedTxs bounds the rejected/re-pinned transactions a node remembers
	// for getReceipt.
	TrackedTxs int `json:"trackedTxs"`
	// RoundDurationMs is the length of a liveness round: every validator
	// sends one heartbeat per round, and the members ranges are pinned to
	// are re-computed at each round's first block.
	RoundDurationMs uint64 `json:"roundDurationMs"`
	// LivenessRounds (K) is how many rounds a heartbeat keeps a validator a
	// member, and the grace of a validator new to the set. A dead owner's
	// ranges move after at most K+1 rounds.
	LivenessRounds uint64 `json:"livenessRounds"`
	// TxLifetimeRounds is how many liveness rounds after the one it was
	// signed in a transaction stays valid (heartbeats: none). It bounds the
	// replay index to the transactions of the last few rounds; a
	// transaction not included in time is re-signed by its owner.
	TxLifetimeRounds uint64 `json:"txLifetimeRounds"`
	// RemovalRounds (M) is how many consecutive rounds that had a block a
	// validator must be out of the membership before the chain decides to
	// remove it from the P-chain set (upgrades.removalsHeight; 0: never).
	// A removal decided at most K+1+M rounds after a validator's death.
	RemovalRounds uint64 `json:"removalRounds"`
	// MinValidators is the fewest validators a removal may leave.
	MinValidators uint64 `json:"minValidators"`
	// PoolChunk is how many ids one reservation of a node's id pool takes
	// (pooled allocations, see writer.Writer.AllocatePooled; 0: 65536, or
	// txLimits.maxCount if lower), and PoolRanges how many ranges a node
	// keeps a pool for. A pool is refilled when half used, so half a chunk
	// should outlast the longest block gap expected at a hot range's rate:
	// the default covers 15 s (three proposer slots of a dead validator) at
	// about 500 requests/s of 4 ids on one range. Ids of a pool lost in a
	// crash are skipped, so a larger chunk only wastes 64-bit id space.
	PoolChunk  uint64 `json:"poolChunk"`
	PoolRanges int    `json:"poolRanges"`
	// Upgrades schedules the changes of execution (Upgrades): unset ones
	// never apply unless a node's chain config schedules them.
	Upgrades Upgrades `json:"upgrades"`
}

// PoolChunkOrDefault is PoolChunk with its default applied.
func (g *Genesis) PoolChunkOrDefault() uint64 {
	if g.PoolChunk != 0 {
		return g.PoolChunk
	}
	return max(min(65536, g.TxLimits.MaxCount), 4)
}

// Liveness is the membership rule for execution.
func (g *Genesis) Liveness() execute.Liveness {
	return execute.Liveness{RoundMs: g.RoundDurationMs, K: g.LivenessRounds, TxLifetime: g.TxLifetimeRounds,
		Removal: execute.Removal{Rounds: g.RemovalRounds, MinValidators: g.MinValidators}}
}

// DefaultGenesis is what an empty JSON object means.
func DefaultGenesis() Genesis {
	return Genesis{
		TxLimits:          txs.DefaultLimits(),
		BlockLimits:       block.DefaultLimits(),
		Mempool:           mempool.DefaultConfig(),
		MaxTimeSkewMs:     1_000,
		ValidatorSetCache: 64,
		SignatureCache:    65_536,

		GroupCommitWindowMs:   2,
		GroupCommitReturnMs:   40,
		GroupCommitMaxEntries: 256,
		MaxWaitMs:             30_000,
		TrackedTxs:            16_384,
		RoundDurationMs:       30_000,
		LivenessRounds:        2,
		TxLifetimeRounds:      2,
		RemovalRounds:         2,
		MinValidators:         2,
		PoolRanges:            1024,
	}
}

// ParseGenesis overlays JSON on the defaults; unknown fields are errors, so a
// typo never silently falls back to a default.
func ParseGenesis(b []byte) (*Genesis, error) {
	if err := refuseFormerNames(b); err != nil {
		return nil, err
	}
	g := DefaultGenesis()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("%w: %w (hint: see config.Genesis for the fields)", ErrBadGenesis, err)
	}
	if err := g.Verify(); err != nil {
		return nil, err
	}
	return &g, nil
}

// formerNames are the liveness fields' names before they were rounds,
// accepted until 2026-12-02 and refused since, with the field to use.
var formerNames = map[string]string{
	"epochDurationMs": "roundDurationMs", "livenessEpochs": "livenessRounds",
	"txLifetimeEpochs": "txLifetimeRounds", "epochCache": "validatorSetCache",
}

// refuseFormerNames names the field a genesis should use for a former name
// (a clearer answer than an unknown field).
func refuseFormerNames(b []byte) error {
	var given map[string]json.RawMessage
	if json.Unmarshal(b, &given) != nil {
		return nil // the decoder says what is wrong
	}
	for former, now := range formerNames {
		if _, ok := given[former]; ok {
			return fmt.Errorf("%w: %s was renamed %s (the former name was accepted until 2026-12-02)", ErrBadGenesis, former, now)
		}
	}
	return nil
}

// Verify checks ranges and cross-field rules.
func (g *Genesis) Verify() error {
	if err := g.TxLimits.Verify(); err != nil {
		return fmt.Errorf("%w: txLimits: %w", ErrBadGenesis, err)
	}
	switch {
	case g.BlockLimits.MaxTxs < 1:
		return fmt.Errorf("%w: blockLimits.maxTxs must be at least 1", ErrBadGenesis)
	case g.BlockLimits.MaxBlockBytes < block.Overhead+block.TxOverhead+g.TxLimits.MaxTxBytes:
		return fmt.Errorf("%w: blockLimits.maxBlockBytes %d cannot hold one maximal transaction (%d bytes)", ErrBadGenesis, g.BlockLimits.MaxBlockBytes, g.TxLimits.MaxTxBytes)
	case g.Mempool.MaxTxs < 1 || g.Mempool.MaxBytes < g.TxLimits.MaxTxBytes:
		return fmt.Errorf("%w: mempool must hold at least one maximal transaction", ErrBadGenesis)
	case g.MaxTimeSkewMs == 0:
		return fmt.Errorf("%w: maxTimeSkewMs must be positive", ErrBadGenesis)
	case g.ValidatorSetCache < 1 || g.SignatureCache < 0:
		return fmt.Errorf("%w: validatorSetCache must be at least 1 and signatureCache not negative", ErrBadGenesis)
	case g.GroupCommitWindowMs > 1000:
		return fmt.Errorf("%w: groupCommitWindowMs %d is above 1000: callers would wait too long", ErrBadGenesis, g.GroupCommitWindowMs)
	case g.GroupCommitReturnMs > 1000:
		return fmt.Errorf("%w: groupCommitReturnMs %d is above 1000: callers would wait too long", ErrBadGenesis, g.GroupCommitReturnMs)
	case g.GroupCommitMaxEntries < 1 || g.GroupCommitMaxEntries > g.TxLimits.MaxEntries:
		return fmt.Errorf("%w: groupCommitMaxEntries %d not in [1, txLimits.maxEntries=%d]", ErrBadGenesis, g.GroupCommitMaxEntries, g.TxLimits.MaxEntries)
	case g.MaxWaitMs == 0 || g.TrackedTxs < 1:
		return fmt.Errorf("%w: maxWaitMs and trackedTxs must be positive", ErrBadGenesis)
	case g.RoundDurationMs < 1000:
		return fmt.Errorf("%w: roundDurationMs %d is below 1000: heartbeats could not land in every round", ErrBadGenesis, g.RoundDurationMs)
	case g.RoundDurationMs/RoundsPerSkew < g.MaxTimeSkewMs:
		return fmt.Errorf("%w: roundDurationMs %d is below %d x maxTimeSkewMs (%d): a proposer dating blocks ahead by the skew could end rounds early and eject validators that heartbeat on time (hint: lower maxTimeSkewMs or lengthen the round)",
			ErrBadGenesis, g.RoundDurationMs, RoundsPerSkew, g.MaxTimeSkewMs)
	case g.PoolChunk != 0 && (g.PoolChunk < 4 || g.PoolChunk > g.TxLimits.MaxCount) || g.PoolRanges < 1:
		return fmt.Errorf("%w: poolChunk %d must be 0 (default) or in [4, txLimits.maxCount=%d], and poolRanges positive", ErrBadGenesis, g.PoolChunk, g.TxLimits.MaxCount)
	case g.LivenessRounds < 1:
		return fmt.Errorf("%w: livenessRounds must be at least 1 (a heartbeat must outlive the round it was sent in)", ErrBadGenesis)
	case g.MinValidators < 1:
		return fmt.Errorf("%w: minValidators must be at least 1 (a removal must never leave the chain without validators)", ErrBadGenesis)
	case g.TxLifetimeRounds < 1:
		return fmt.Errorf("%w: txLifetimeRounds must be at least 1 (a transaction signed at the end of a round must be able to land in the next)", ErrBadGenesis)
	}
	return nil
}

// RoundsPerSkew is how many times the skew bound a liveness round must last
// at least. A proposer may date its block up to the skew ahead, so it can
// start the next round early by that much; at a quarter of a round at most,
// validators that heartbeat early in each round stay members (K >= 1).
const RoundsPerSkew = 4

// HeartbeatLead is how long before a liveness round starts a validator sends
// that round's heartbeat (writer.HeartbeatAhead): a tenth of the round,
// between 100 ms and 1 s, time enough for gossip to put it in every pool.
// A validator that dies within the lead of a round boundary, after sending,
// stays a member one round longer than one that dies earlier.
func (g *Genesis) HeartbeatLead() time.Duration {
	return min(max(time.Duration(g.RoundDurationMs/10)*time.Millisecond, 100*time.Millisecond), time.Second)
}

// FailoverBound is the longest a dead validator stays a member while every
// round has a block: K+1 liveness rounds plus the heartbeat lead (rounds
// without a block do not count; docs/concepts/liveness.md, Failover bound). Its
// ranges allocate again once the first block of the round that drops it is
// accepted, and their new owner's transaction after it.
func (g *Genesis) FailoverBound() time.Duration {
	return time.Duration(g.LivenessRounds+1)*time.Duration(g.RoundDurationMs)*time.Millisecond + g.HeartbeatLead()
}

// GroupCommitWindow as a duration.
func (g *Genesis) GroupCommitWindow() time.Duration {
	return time.Duration(g.GroupCommitWindowMs) * time.Millisecond
}

// GroupCommitReturn as a duration.
func (g *Genesis) GroupCommitReturn() time.Duration {
	return time.Duration(g.GroupCommitReturnMs) * time.Millisecond
}

// MaxWait as a duration.
func (g *Genesis) MaxWait() time.Duration { return time.Duration(g.MaxWaitMs) * time.Millisecond }

// MaxTimeSkew as a duration.
func (g *Genesis) MaxTimeSkew() time.Duration {
	return time.Duration(g.MaxTimeSkewMs) * time.Millisecond
}

// ReplayPruneLimit is how many expired replay entries one block deletes at
// most: twice what a block can add, so a burst's backlog shrinks block by
// block without any block paying for all of it.
func (g *Genesis) ReplayPruneLimit() int { return 2 * g.BlockLimits.MaxTxs }
