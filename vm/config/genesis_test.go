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
		"short epochs":           `{"epochDurationMs": 10}`,
		"heartbeat never counts": `{"livenessEpochs": 0}`,
		"pool chunk above count": `{"poolChunk": 2000000}`,
		"pool chunk too small":   `{"poolChunk": 2}`,
		"no pools":               `{"poolRanges": 0}`,
	} {
		_, err := config.ParseGenesis([]byte(in))
		require.ErrorIs(t, err, config.ErrBadGenesis, name)
	}
}

// TestGenesisRefusesASqueezableEpoch: a proposer may date a block up to the
// skew bound ahead; with a liveness round not several times longer it could
// end epochs early and eject validators that heartbeat on time.
func TestGenesisRefusesASqueezableEpoch(t *testing.T) {
	for _, g := range []string{
		`{"epochDurationMs": 1000, "maxTimeSkewMs": 10000}`,
		`{"epochDurationMs": 10000, "maxTimeSkewMs": 10000}`,
		`{"epochDurationMs": 30000, "maxTimeSkewMs": 10000}`,
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

// TestGenesisAcceptsFormerNames: for one release the liveness fields keep
// their former "epoch" names; setting a field under both names is refused.
func TestGenesisAcceptsFormerNames(t *testing.T) {
	g, err := config.ParseGenesis([]byte(`{"epochDurationMs": 20000, "livenessEpochs": 3, "txLifetimeEpochs": 4, "epochCache": 9}`))
	require.NoError(t, err)
	require.Equal(t, uint64(20000), g.RoundDurationMs)
	require.Equal(t, uint64(3), g.LivenessRounds)
	require.Equal(t, uint64(4), g.TxLifetimeRounds)
	require.Equal(t, 9, g.ValidatorSetCache)
	now, err := config.ParseGenesis([]byte(`{"roundDurationMs": 20000, "livenessRounds": 3}`))
	require.NoError(t, err)
	require.Equal(t, g.RoundDurationMs, now.RoundDurationMs)
	_, err = config.ParseGenesis([]byte(`{"roundDurationMs": 20000, "epochDurationMs": 20000}`))
	require.ErrorIs(t, err, config.ErrBadGenesis)
	require.ErrorContains(t, err, "former name")
}
