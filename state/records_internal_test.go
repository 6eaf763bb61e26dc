package state

import (
	"encoding/hex"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/pinning"
)

// TestMembershipRecordBytes: a record without BlockRounds keeps the bytes
// of the first encoding, so chains whose LivenessGaps upgrade has not come
// write the same state (and state root) as before it; a record with them
// reads back whole.
func TestMembershipRecordBytes(t *testing.T) {
	require := require.New(t)
	m := &Membership{PChainHeight: 7, Round: 9, Generation: 2, Fallback: true,
		Members: []pinning.Member{{NodeID: ids.NodeID{1}, Weight: 5}}}
	b, err := encodeMembership(m)
	require.NoError(err)
	require.Equal("01"+"0000000000000007"+"0000000000000009"+"0000000000000002"+"01"+"00000001"+
		"0100000000000000000000000000000000000000"+"0000000000000005", hex.EncodeToString(b))
	got, err := decodeMembership(b)
	require.NoError(err)
	require.Equal(m, got)

	m.BlockRounds = []uint64{9, 8, 6}
	b, err = encodeMembership(m)
	require.NoError(err)
	require.Equal(byte(2), b[0])
	got, err = decodeMembership(b)
	require.NoError(err)
	require.Equal(m, got)

	_, err = decodeMembership(append([]byte{2}, b[1:len(b)-4-3*8]...))
	require.ErrorIs(err, ErrCorrupt, "version 2 without its rounds")
	_, err = decodeMembership(append(b[:len(b)-3*8-4:len(b)-3*8-4], 0, 0, 0, 0))
	require.ErrorIs(err, ErrCorrupt, "version 2 with no rounds is never written")
}
