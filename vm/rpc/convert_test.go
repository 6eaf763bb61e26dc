package rpc

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
)

// TestConditionsReadAsTheChainNamesThem: every condition kind the API names
// is the chain's kind of that name, and anything else is refused as the
// chain refuses it.
func TestConditionsReadAsTheChainNamesThem(t *testing.T) {
	h := api.ID{7}
	for in, want := range map[api.Condition]txs.Condition{
		{}:                                {Kind: txs.IfAny},
		{Kind: api.IfAny}:                 {Kind: txs.IfAny},
		{Kind: api.IfAbsent}:              {Kind: txs.IfAbsent},
		{Kind: api.IfVersion, Version: 3}: {Kind: txs.IfVersion, Version: 3},
		{Kind: api.IfContentHash, ContentHash: &h}: {Kind: txs.IfContentHash, ContentHash: ids.ID{7}},
	} {
		got, err := conditionOf(&in)
		require.NoError(t, err, in.Kind)
		require.Equal(t, want, got, in.Kind)
		text, err := got.Kind.MarshalText()
		require.NoError(t, err)
		if in.Kind != "" {
			require.Equal(t, in.Kind, string(text))
		}
	}
	_, err := conditionOf(&api.Condition{Kind: "newer"})
	require.ErrorIs(t, err, txs.ErrBadCondition)
	got, err := conditionOf(nil)
	require.NoError(t, err)
	require.Equal(t, txs.Condition{}, got)
}
