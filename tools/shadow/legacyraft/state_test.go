package legacyraft

import (
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

func TestAllocBatchCodecRoundTrip(t *testing.T) {
	records := []allocRecord{{rangeKey: "a", count: 1}, {rangeKey: "bucket/é", count: 1 << 40}}
	got, err := decodeAllocBatch(encodeAllocBatch(records))
	require.NoError(t, err)
	require.Equal(t, records, got)

	enc := encodeAllocBatch(records)
	for i := range len(enc) - 1 {
		_, err := decodeAllocBatch(enc[:i])
		require.Error(t, err, "prefix %d", i)
	}
	_, err = decodeAllocBatch(append(enc, 0))
	require.ErrorIs(t, err, errTrailing)

	id, err := decodeMaxVolumeID(encodeMaxVolumeID(42))
	require.NoError(t, err)
	require.Equal(t, uint64(42), id)
}

func FuzzDecodeAllocBatch(f *testing.F) {
	f.Add(encodeAllocBatch([]allocRecord{{rangeKey: "r", count: 3}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		records, err := decodeAllocBatch(b)
		if err != nil {
			return
		}
		again, err := decodeAllocBatch(encodeAllocBatch(records))
		require.NoError(t, err)
		require.Equal(t, records, again)
	})
}

func applyBatch(t *testing.T, f *counterFSM, term uint64, records ...allocRecord) *batchResponse {
	t.Helper()
	resp, ok := f.Apply(&raft.Log{Type: raft.LogCommand, Term: term, Data: encodeAllocBatch(records)}).(*batchResponse)
	require.True(t, ok)
	return resp
}

func TestCounterFSM(t *testing.T) {
	require := require.New(t)
	f := newCounterFSM(0, 0)
	resp := applyBatch(t, f, 7, allocRecord{"a", 10}, allocRecord{"b", 1}, allocRecord{"a", 5}, allocRecord{"a", 0})
	require.Equal(uint64(7), resp.term)
	require.Equal(uint64(1), resp.outcomes[0].first)
	require.Equal(uint64(1), resp.outcomes[1].first)
	require.Equal(uint64(11), resp.outcomes[2].first)
	require.ErrorIs(resp.outcomes[3].err, legacy.ErrRejected)

	restored := newCounterFSM(0, 0)
	snapshotRestore(t, f, restored)
	require.Equal(uint64(16), restored.nextFor("a"))
	require.Equal(uint64(2), restored.nextFor("b"))
	require.Equal(uint64(1), restored.nextFor("c"))
}

func TestCounterFSMRejectsForeignSlot(t *testing.T) {
	const groups = 4
	f := newCounterFSM(1, groups)
	var mine, foreign string
	for i := 0; mine == "" || foreign == ""; i++ {
		key := string(rune('a'+i%26)) + string(rune('a'+i/26))
		if Slot(key)%groups == 1 {
			mine = key
		} else {
			foreign = key
		}
	}
	resp := applyBatch(t, f, 1, allocRecord{mine, 1}, allocRecord{foreign, 1})
	require.NoError(t, resp.outcomes[0].err)
	require.ErrorIs(t, resp.outcomes[1].err, errWrongGroup)
}

func TestVolumeFSM(t *testing.T) {
	f := &volumeFSM{}
	for _, id := range []uint64{3, 1, 5} {
		f.Apply(&raft.Log{Type: raft.LogCommand, Data: encodeMaxVolumeID(id)})
	}
	require.Equal(t, uint64(5), f.maxVolumeID.Load())
	restored := &volumeFSM{}
	restored.maxVolumeID.Store(99)
	snapshotRestore(t, f, restored)
	require.Equal(t, uint64(5), restored.maxVolumeID.Load())
}

// snapshotRestore persists from's snapshot into an in-memory store and
// restores it into to, the path raft takes for a lagging follower.
func snapshotRestore(t *testing.T, from, to raft.FSM) {
	t.Helper()
	require := require.New(t)
	snap, err := from.Snapshot()
	require.NoError(err)
	defer snap.Release()
	store := raft.NewInmemSnapshotStore()
	sink, err := store.Create(raft.SnapshotVersionMax, 1, 1, raft.Configuration{}, 1, nil)
	require.NoError(err)
	require.NoError(snap.Persist(sink))
	_, rc, err := store.Open(sink.ID())
	require.NoError(err)
	require.NoError(to.Restore(io.NopCloser(rc)))
}

func TestSequencer(t *testing.T) {
	s := newSequencer()
	require.Equal(t, uint64(1), s.nextFileID(10))
	require.Equal(t, uint64(11), s.nextFileID(1))
	s.setMax(5) // below: ignored
	require.Equal(t, uint64(12), s.nextFileID(1))
	s.setMax(100)
	require.Equal(t, uint64(101), s.nextFileID(1))
}

func TestRouteTable(t *testing.T) {
	require := require.New(t)
	tbl := NewRouteTable(1, 4)
	for s := range SlotCount {
		g, ok := tbl.Group(s)
		require.True(ok)
		require.Equal(s%4, g)
	}
	next := tbl.WithoutSlot(7)
	require.Equal(uint64(2), next.Revision())
	_, ok := next.Group(7)
	require.False(ok)
	_, ok = tbl.Group(7)
	require.True(ok, "tables are immutable")
	require.Equal(Slot("x"), Slot("x"))
	require.Less(Slot("anything"), SlotCount)
}
