package chain

import (
	"context"
	"errors"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs/txstest"
)

type fakeSource struct {
	calls map[uint64]int
	sets  map[uint64]map[ids.NodeID]*validators.GetValidatorOutput
}

var errAbove = errors.New("height above the P-chain tip")

func (f *fakeSource) GetValidatorSet(_ context.Context, h uint64, _ ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	f.calls[h]++
	s, ok := f.sets[h]
	if !ok {
		return nil, errAbove
	}
	return s, nil
}

func TestCache(t *testing.T) {
	require := require.New(t)
	keys, err := txstest.NewKeys(t.Name(), 3)
	require.NoError(err)
	full := map[ids.NodeID]*validators.GetValidatorOutput{
		keys[0].NodeID:  {NodeID: keys[0].NodeID, Weight: 1, PublicKey: keys[0].PublicKey()},
		keys[1].NodeID:  {NodeID: keys[1].NodeID, Weight: 2, PublicKey: keys[1].PublicKey()},
		keys[2].NodeID:  {NodeID: keys[2].NodeID, Weight: 3}, // no BLS key
		ids.EmptyNodeID: {Weight: 5, PublicKey: keys[0].PublicKey()},
	}
	src := &fakeSource{calls: map[uint64]int{}, sets: map[uint64]map[ids.NodeID]*validators.GetValidatorOutput{
		1: nil, 2: full, 3: full, 4: full,
	}}
	c := newValidatorSets(src, ids.ID{'s'}, 2)
	ctx := context.Background()

	_, err = c.Get(ctx, 1)
	require.ErrorIs(err, ErrNoValidators)
	_, err = c.Get(ctx, 9)
	require.ErrorIs(err, errAbove)

	e, err := c.Get(ctx, 2)
	require.NoError(err)
	require.Equal(2, e.Len(), "empty NodeID and keyless members dropped")
	_, ok := e.Weight(keys[2].NodeID)
	require.False(ok)
	again, err := c.Get(ctx, 2)
	require.NoError(err)
	require.Same(e, again)
	require.Equal(1, src.calls[2], "fetched once per height")

	_, err = c.Get(ctx, 3)
	require.NoError(err)
	_, err = c.Get(ctx, 4)
	require.NoError(err)
	_, err = c.Get(ctx, 2)
	require.NoError(err)
	require.Equal(2, src.calls[2], "bounded: the oldest height was evicted")
}
