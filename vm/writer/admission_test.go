package writer

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
)

// TestWindowRefusesPinsNoHonestSignerMakes: P-chain heights outside [last
// accepted, newest seen], rounds more than one ahead, heartbeats of rounds
// other than the previous, current and next, and blocks bound too far
// ahead are refused; everything at the edges passes.
func TestWindowRefusesPinsNoHonestSignerMakes(t *testing.T) {
	win := window{lowHeight: 10, highHeight: 12, acceptedRound: 5, round: 6, acceptedHeight: 100}
	ok := func(h txs.Header, heartbeat bool) error { return win.check(&h, heartbeat) }
	for _, h := range []txs.Header{
		{PChainHeight: 10, Round: 6}, {PChainHeight: 12, Round: 7}, {PChainHeight: 11, Round: 0},
		{PChainHeight: 10, Round: 6, BlockHeight: 100 + boundAhead},
	} {
		require.NoError(t, ok(h, false), "%+v", h)
	}
	for _, h := range []txs.Header{{PChainHeight: 10, Round: 5}, {PChainHeight: 10, Round: 7}} {
		require.NoError(t, ok(h, true), "heartbeat %+v", h)
	}
	for _, h := range []txs.Header{
		{PChainHeight: 9, Round: 6}, {PChainHeight: 13, Round: 6}, {PChainHeight: 10, Round: 8},
		{PChainHeight: 10, Round: 6, BlockHeight: 101 + boundAhead},
	} {
		require.ErrorIs(t, ok(h, false), ErrOutsideWindow, "%+v", h)
	}
	require.ErrorIs(t, ok(txs.Header{PChainHeight: 10, Round: 4}, true), ErrOutsideWindow, "a heartbeat two rounds old")
	require.ErrorIs(t, ok(txs.Header{PChainHeight: 10, Round: 8}, true), ErrOutsideWindow, "a heartbeat two rounds ahead")
}
