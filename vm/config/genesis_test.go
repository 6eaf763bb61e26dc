package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/config"
)

func TestParseGenesis(t *testing.T) {
	g, err := config.ParseGenesis([]byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, config.DefaultGenesis(), *g, "an empty object means the defaults")

	g, err = config.ParseGenesis([]byte(`{"timestamp": 1234, "groupCommitWindowMs": 5, "txLimits": {"maxEntries": 64, "maxTxBytes": 65536, "maxRangeLen": 64, "maxKeyLen": 512, "maxChunks": 16, "maxCount": 1000}, "groupCommitMaxEntries": 64}`))
	require.NoError(t, err)
	require.Equal(t, uint64(1234), g.Timestamp)
	require.Equal(t, 64, g.TxLimits.MaxEntries)

	for name, in := range map[string]string{
		"unknown field":          `{"timestmap": 1}`,
		"not json":               `{`,
		"bad tx limits":          `{"txLimits": {"maxEntries": 0}}`,
		"block too small":        `{"blockLimits": {"maxBlockBytes": 100, "maxTxs": 4}}`,
		"no block txs":           `{"blockLimits": {"maxBlockBytes": 4194304, "maxTxs": 0}}`,
		"mempool too small":      `{"mempool": {"maxTxs": 1, "maxBytes": 10}}`,
		"zero skew":              `{"maxTimeSkewMs": 0}`,
		"window too long":        `{"groupCommitWindowMs": 5000}`,
		"return wait too long":   `{"groupCommitReturnMs": 1001}`,
		"group above tx entries": `{"groupCommitMaxEntries": 100000}`,
		"no wait bound":          `{"maxWaitMs": 0}`,
		"short rounds":           `{"roundDurationMs": 10}`,
		"heartbeat never counts": `{"livenessRounds": 0}`,
		"pool chunk above count": `{"poolChunk": 2000000}`,
		"pool chunk too small":   `{"poolChunk": 2}`,
		"no pools":               `{"poolRanges": 0}`,
	} {
		_, err := config.ParseGenesis([]byte(in))
		require.ErrorIs(t, err, config.ErrBadGenesis, name)
	}
}

// TestGenesisRefusesASqueezableRound: a proposer may date a block up to the
// skew bound ahead; with a liveness round not several times longer it could
// end epochs early and eject validators that heartbeat on time.
func TestGenesisRefusesASqueezableRound(t *testing.T) {
	for _, g := range []string{
		`{"roundDurationMs": 1000, "maxTimeSkewMs": 10000}`,
		`{"roundDurationMs": 10000, "maxTimeSkewMs": 10000}`,
		`{"roundDurationMs": 30000, "maxTimeSkewMs": 10000}`,
	} {
		_, err := config.ParseGenesis([]byte(g))
		require.ErrorIs(t, err, config.ErrBadGenesis, g)
		require.ErrorContains(t, err, "maxTimeSkewMs", g)
	}
	d, err := config.ParseGenesis([]byte(`{}`))
	require.NoError(t, err)
	require.LessOrEqual(t, d.MaxTimeSkewMs*config.RoundsPerSkew, d.RoundDurationMs, "the defaults keep the rule")
	require.LessOrEqual(t, d.MaxTimeSkewMs, uint64(2000), "a tight default skew bound")
}

// TestGenesisRefusesFormerNames: the liveness fields' former "epoch"
// names, gone since 2026-12-02, are refused with the name to use.
func TestGenesisRefusesFormerNames(t *testing.T) {
	for former, now := range map[string]string{
		"epochDurationMs": "roundDurationMs", "livenessEpochs": "livenessRounds",
		"txLifetimeEpochs": "txLifetimeRounds", "epochCache": "validatorSetCache",
	} {
		_, err := config.ParseGenesis([]byte(`{"` + former + `": 3}`))
		require.ErrorIs(t, err, config.ErrBadGenesis, former)
		require.ErrorContains(t, err, "renamed "+now, former)
	}
}
