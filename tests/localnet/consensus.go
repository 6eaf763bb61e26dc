package localnet

import (
	"strconv"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
)

// Primary-network consensus parameters of the local network. avalanchego's
// defaults (k=20, alpha=15, beta=20) need about 75% of the stake to answer
// a poll: with one of three equal validators dead, a poll succeeds about 30%
// of the time, twenty in a row practically never, and the P-chain stops
// accepting transactions. Then no operator could remove the dead validator
// from the subnet, which is what ends the proposer VM's slot gaps (README,
// Operations). With alpha=11 of k=20 (just above half), two live validators
// of three pass a poll about 91% of the time (about 64 polls per decision,
// well under a second here), while a single isolated validator of three
// passes one about 4% of the time and twenty in a row with probability
// about 3e-29: it cannot finalize on its own. With every validator up
// nothing changes: each poll succeeds and a decision takes beta polls.
//
// These apply to the P-, X- and C-chains of the local network only; the
// S-Chain subnet has its own parameters (Config.Snow).
const (
	primarySampleSize      = 20
	primaryQuorumSize      = 11
	primaryCommitThreshold = 20
)

// setPrimaryConsensus sets the primary network's consensus flags.
func setPrimaryConsensus(flags tmpnet.FlagsMap) {
	flags[config.SnowSampleSizeKey] = strconv.Itoa(primarySampleSize)
	flags[config.SnowPreferenceQuorumSizeKey] = strconv.Itoa(primaryQuorumSize)
	flags[config.SnowConfidenceQuorumSizeKey] = strconv.Itoa(primaryQuorumSize)
	flags[config.SnowCommitThresholdKey] = strconv.Itoa(primaryCommitThreshold)
}
