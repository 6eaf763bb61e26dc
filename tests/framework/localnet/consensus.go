package localnet

import (
	"fmt"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
)

// setPrimaryConsensus gives the local network's primary network (P-, X-
// and C-chains) the subnet's consensus parameters, snow (see Snow), instead
// of avalanchego's defaults.
//
// The defaults (k=20, alpha 15, beta 20) need about 75% of the stake to
// answer a poll: with one of three equal validators dead, a poll succeeds
// about 30% of the time, twenty in a row practically never, and the P-chain
// accepted no transaction within 90 s (measured). Then nobody could remove
// the dead validator from the subnet, which is what ends the proposer VM's
// slot gaps (docs/operating/validators.md). With Snow's alphaConfidence 12 of
// k=20, two live validators of three pass about 81% of polls (a P-chain
// transaction is accepted in seconds), while one isolated validator cannot
// finalize alone (Snow says why that matters). With every validator
// up nothing changes: each poll succeeds and a decision takes beta polls.
func setPrimaryConsensus(flags tmpnet.FlagsMap, snow map[string]any) {
	for key, name := range map[string]string{
		config.SnowSampleSizeKey:           "k",
		config.SnowPreferenceQuorumSizeKey: "alphaPreference",
		config.SnowConfidenceQuorumSizeKey: "alphaConfidence",
		config.SnowCommitThresholdKey:      "beta",
		config.SnowConcurrentRepollsKey:    "concurrentRepolls",
	} {
		flags[key] = fmt.Sprint(snow[name])
	}
}
