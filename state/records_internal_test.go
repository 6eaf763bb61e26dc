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

// TestReceiptOfOtherKindsKeepsVersion1 pins the bytes of a receipt without
// lease fields: old blocks replay to the same state roots only if their
// receipts encode exactly as before the lease fields existed.
func TestReceiptOfOtherKindsKeepsVersion1(t *testing.T) {
	rc := &Receipt{TxID: ids.ID{7}, Height: 3, Kind: "allocate", Entries: []ReceiptEntry{{Range: "r", Base: 1, Count: 2}}}
	b, err := encodeReceipt(rc)
	require.NoError(t, err)
	require.Equal(t, "01"+"07"+"00000000000000000000000000000000000000000000000000000000000000"+
		"0000000000000003"+"0008616c6c6f63617465"+"00000001"+"000172"+"0000000000000001"+"0000000000000002"+"0000"+"0000"+"00",
		hex.EncodeToString(b))
	got, err := decodeReceipt(b)
	require.NoError(t, err)
	require.Equal(t, rc, got)
}

func TestLeaseReceiptRoundTrip(t *testing.T) {
	rc := &Receipt{TxID: ids.ID{9}, Height: 12, Kind: "lease", Entries: []ReceiptEntry{
		{Range: "c/lock/admin", Lease: LeaseGranted, Holder: "10.0.0.1", Token: 5, ExpiresMs: 1_700_000_010_000},
		{Range: "c/vacuum/3", Lease: LeaseHeld, Holder: "m2", Token: 9, ExpiresMs: 1_700_000_005_000},
		{Range: "c/vacuum/4", Lease: LeaseLost},
	}}
	b, err := encodeReceipt(rc)
	require.NoError(t, err)
	require.Equal(t, receiptVersionLease, b[0])
	got, err := decodeReceipt(b)
	require.NoError(t, err)
	require.Equal(t, rc, got)
	_, err = decodeReceipt(append(b, 0))
	require.ErrorIs(t, err, ErrCorrupt)
}

// FuzzLeaseRecord feeds arbitrary bytes to the lease decoder: it never
// panics, and what it accepts encodes back to the same bytes (one encoding
// per record).
func FuzzLeaseRecord(f *testing.F) {
	f.Add(encodeLease(Lease{Holder: "10.0.0.1:9333", Token: 1, ExpiresMs: 1_700_000_000_000}))
	f.Add(encodeLease(Lease{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeLease(b)
		if err != nil {
			return
		}
		require.Equal(t, b, encodeLease(l))
	})
}

// TestLivenessRecordBytes: a liveness record with no rounds out keeps the
// bytes of the first encoding (a chain before upgrades.removalsHeight
// writes exactly what it wrote before); one with rounds out round-trips in
// version 2, and a version 2 record with none is corrupt.
func TestLivenessRecordBytes(t *testing.T) {
	require := require.New(t)
	old := Liveness{FirstSeen: 7, Heartbeat: 9, HasHeartbeat: true}
	b := encodeLiveness(old)
	require.Equal(append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9}, 1), b)
	got, err := decodeLiveness(b)
	require.NoError(err)
	require.Equal(old, got)

	out := Liveness{FirstSeen: 7, Heartbeat: 9, HasHeartbeat: true, Out: 3}
	got, err = decodeLiveness(encodeLiveness(out))
	require.NoError(err)
	require.Equal(out, got)
	_, err = decodeLiveness(append(append([]byte{2}, b[1:]...), 0, 0, 0, 0, 0, 0, 0, 0))
	require.ErrorIs(err, ErrCorrupt)

	r := Removal{Round: 104, PChainHeight: 10, Weight: 10}
	gotR, err := decodeRemoval(encodeRemoval(r))
	require.NoError(err)
	require.Equal(r, gotR)
}
