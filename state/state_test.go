package state_test

import (
	"errors"
	"testing"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
)

// countingDB counts writes that reach the database and can make batch
// writes fail, to show Accept is one atomic batch.
type countingDB struct {
	database.Database
	puts, batches int
	failBatch     bool
}

var errInjected = errors.New("injected write failure")

func (d *countingDB) Put(k, v []byte) error { d.puts++; return d.Database.Put(k, v) }
func (d *countingDB) Delete(k []byte) error { d.puts++; return d.Database.Delete(k) }
func (d *countingDB) NewBatch() database.Batch {
	return &countingBatch{Batch: d.Database.NewBatch(), db: d}
}

type countingBatch struct {
	database.Batch
	db *countingDB
}

func (b *countingBatch) Write() error {
	if b.db.failBatch {
		return errInjected
	}
	b.db.batches++
	return b.Batch.Write()
}

var txsLimits = txs.DefaultLimits()

func open(t *testing.T, db database.Database) *state.State {
	s, err := state.New(db, txs.DefaultLimits())
	require.NoError(t, err)
	return s
}

func layerOn(t *testing.T, s *state.State, parent *state.Layer, f func(l *state.Layer)) *state.Layer {
	l, err := s.NewLayer(parent)
	require.NoError(t, err)
	if f != nil {
		f(l)
	}
	_, err = l.Seal()
	require.NoError(t, err)
	return l
}

func setCounter(t *testing.T, r string, next uint64) func(*state.Layer) {
	return func(l *state.Layer) {
		require.NoError(t, l.Apply(&state.Changes{
			Counters:    []state.CounterUpdate{{Range: r, Next: next}},
			Receipt:     &state.Receipt{TxID: ids.ID{byte(next)}, Height: l.Height(), Kind: "allocate", Entries: []state.ReceiptEntry{{Range: r, Base: next - 1, Count: 1}}},
			Round:       5,
			SigningHash: ids.ID{byte(next), 's'},
		}))
	}
}

func counter(t *testing.T, r state.Reader, rk string) uint64 {
	v, err := r.Counter(rk)
	require.NoError(t, err)
	return v
}

func TestLayersChainAndIsolate(t *testing.T) {
	require := require.New(t)
	s := open(t, memdb.New())
	_, err := s.LastAccepted()
	require.ErrorIs(err, state.ErrNotInitialized)
	g := layerOn(t, s, nil, nil)
	require.NoError(s.Accept(g, ids.ID{'g'}, []byte("g")))

	a := layerOn(t, s, nil, setCounter(t, "r", 10))
	child := layerOn(t, s, a, func(l *state.Layer) {
		require.Equal(uint64(10), counter(t, l, "r"), "child sees its processing parent")
		setCounter(t, "r", 11)(l)
	})
	sibling := layerOn(t, s, nil, func(l *state.Layer) {
		require.Zero(counter(t, l, "r"), "sibling does not see a's writes")
		setCounter(t, "r", 3)(l)
	})
	require.Zero(counter(t, s.Accepted(), "r"), "nothing is visible before Accept")

	require.ErrorIs(s.Accept(child, ids.ID{'c'}, nil), state.ErrParentNotAccepted)
	require.NoError(s.Accept(a, ids.ID{'a'}, []byte("a")))
	s.Reject(sibling)
	require.Equal(uint64(10), counter(t, s.Accepted(), "r"))
	require.NoError(s.Accept(child, ids.ID{'c'}, []byte("c")))
	require.Equal(uint64(11), counter(t, s.Accepted(), "r"))
	_, err = s.Accepted().Receipt(ids.ID{3})
	require.ErrorIs(err, state.ErrNotFound, "the rejected sibling left no receipt")
	la, err := s.LastAccepted()
	require.NoError(err)
	require.Equal(state.Accepted{ID: ids.ID{'c'}, Height: 2, Root: child.Root()}, la)
}

func TestAcceptIsOneBatchAndAtomic(t *testing.T) {
	require := require.New(t)
	db := &countingDB{Database: memdb.New()}
	s := open(t, db)
	g := layerOn(t, s, nil, nil)
	require.NoError(s.Accept(g, ids.ID{'g'}, []byte("g")))
	require.Equal(1, db.batches)
	require.Zero(db.puts)

	l := layerOn(t, s, nil, setCounter(t, "r", 7))
	db.failBatch = true
	require.ErrorIs(s.Accept(l, ids.ID{'b'}, []byte("b")), errInjected)
	require.Zero(counter(t, s.Accepted(), "r"))
	_, err := s.Block(ids.ID{'b'})
	require.ErrorIs(err, state.ErrNotFound)
	la, err := s.LastAccepted()
	require.NoError(err)
	require.Equal(ids.ID{'g'}, la.ID)

	db.failBatch = false
	require.NoError(s.Accept(l, ids.ID{'b'}, []byte("b")))
	require.Equal(2, db.batches)
	require.Zero(db.puts, "everything went through the batch")
}

func TestRejectDropsDescendants(t *testing.T) {
	require := require.New(t)
	s := open(t, memdb.New())
	require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{'g'}, nil))
	a := layerOn(t, s, nil, setCounter(t, "r", 1))
	b := layerOn(t, s, a, setCounter(t, "r", 2))
	s.Reject(a)
	require.ErrorIs(s.Accept(b, ids.ID{'b'}, nil), state.ErrDropped)
	_, err := s.NewLayer(b)
	require.ErrorIs(err, state.ErrDropped)
	require.Zero(counter(t, s.Accepted(), "r"))
}

func TestSealedLayersAreFrozen(t *testing.T) {
	require := require.New(t)
	s := open(t, memdb.New())
	l, err := s.NewLayer(nil)
	require.NoError(err)
	_, err = s.NewLayer(l)
	require.ErrorIs(err, state.ErrNotSealed)
	require.ErrorIs(s.Accept(l, ids.ID{}, nil), state.ErrNotSealed)
	_, err = l.Seal()
	require.NoError(err)
	require.ErrorIs(l.Apply(&state.Changes{}), state.ErrSealed)
	// Accepting height 1 before genesis is out of order.
	g := layerOn(t, s, nil, nil)
	h1 := layerOn(t, s, g, nil)
	require.NoError(s.Accept(g, ids.ID{'g'}, nil))
	require.NoError(s.Accept(h1, ids.ID{1}, nil))
	stale := layerOn(t, s, nil, nil)
	require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{2}, nil))
	require.ErrorIs(s.Accept(stale, ids.ID{3}, nil), state.ErrWrongHeight)
}

func TestReopenRestoresEverything(t *testing.T) {
	require := require.New(t)
	db := memdb.New()
	s := open(t, db)
	require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{'g'}, []byte("genesis")))
	l := layerOn(t, s, nil, setCounter(t, "r", 9))
	require.NoError(s.Accept(l, ids.ID{'1'}, []byte("one")))

	again := open(t, db)
	la, err := again.LastAccepted()
	require.NoError(err)
	require.Equal(state.Accepted{ID: ids.ID{'1'}, Height: 1, Root: l.Root()}, la)
	id, err := again.BlockIDAtHeight(1)
	require.NoError(err)
	require.Equal(ids.ID{'1'}, id)
	b, err := again.Block(id)
	require.NoError(err)
	require.Equal([]byte("one"), b)
	require.Equal(uint64(9), counter(t, again.Accepted(), "r"))
	rc, err := again.Accepted().Receipt(ids.ID{9})
	require.NoError(err)
	require.Equal([]state.ReceiptEntry{{Range: "r", Base: 8, Count: 1}}, rc.Entries)
	// The next layer continues from the restored root and height.
	next := layerOn(t, again, nil, nil)
	require.Equal(uint64(2), next.Height())
}

func TestRootDependsOnChangesOnly(t *testing.T) {
	require := require.New(t)
	build := func(order []string) ids.ID {
		s := open(t, memdb.New())
		require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{'g'}, nil))
		l := layerOn(t, s, nil, func(l *state.Layer) {
			for i, r := range order {
				require.NoError(l.Apply(&state.Changes{Counters: []state.CounterUpdate{{Range: r, Next: 1}}, Round: 1, SigningHash: ids.ID{byte(i)}}))
			}
		})
		return l.Root()
	}
	require.Equal(build([]string{"a", "b"}), build([]string{"b", "a"}), "write order within a block does not matter")
	require.NotEqual(build([]string{"a", "b"}), build([]string{"a", "c"}))
}

func TestPruneReplayBoundsTheIndex(t *testing.T) {
	require := require.New(t)
	s := open(t, memdb.New())
	require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{'g'}, nil))
	l := layerOn(t, s, nil, func(l *state.Layer) {
		for i := 0; i < 5; i++ {
			require.NoError(l.Apply(&state.Changes{Round: 5, SigningHash: ids.ID{byte(i)}}))
			require.NoError(l.Apply(&state.Changes{Round: 6, SigningHash: ids.ID{byte(i)}}))
		}
	})
	require.NoError(s.Accept(l, ids.ID{1}, nil))
	p := layerOn(t, s, nil, func(l *state.Layer) {
		n, err := l.PruneReplay(6, 100)
		require.NoError(err)
		require.Equal(5, n)
	})
	for i := 0; i < 5; i++ {
		old, err := p.Applied(5, ids.ID{byte(i)})
		require.NoError(err)
		require.False(old)
		cur, err := p.Applied(6, ids.ID{byte(i)})
		require.NoError(err)
		require.True(cur)
	}
	e, err := p.ReplayPruned()
	require.NoError(err)
	require.Equal(uint64(6), e)
	require.Equal(6, p.Changed(), "five deletions and the new bound")
}

// TestPruneReplayIsBoundedPerBlock: a backlog larger than the limit is
// deleted over several blocks, oldest first, each block deleting at most
// the limit; nothing at or above the bound is touched.
func TestPruneReplayIsBoundedPerBlock(t *testing.T) {
	require := require.New(t)
	s := open(t, memdb.New())
	require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{'g'}, nil))
	l := layerOn(t, s, nil, func(l *state.Layer) {
		for r := uint64(1); r <= 3; r++ {
			for i := 0; i < 4; i++ {
				require.NoError(l.Apply(&state.Changes{Round: r, SigningHash: ids.ID{byte(i)}}))
			}
		}
	})
	require.NoError(s.Accept(l, ids.ID{1}, nil))
	wantPruned := []uint64{2, 3, 3}
	for b, want := range wantPruned {
		p := layerOn(t, s, nil, func(l *state.Layer) {
			n, err := l.PruneReplay(3, 5)
			require.NoError(err)
			require.LessOrEqual(n, 5)
		})
		got, err := p.ReplayPruned()
		require.NoError(err)
		require.Equal(want, got, "block %d", b)
		require.NoError(s.Accept(p, ids.ID{byte(2 + b)}, nil))
	}
	for r := uint64(1); r <= 3; r++ {
		for i := 0; i < 4; i++ {
			has, err := s.Accepted().Applied(r, ids.ID{byte(i)})
			require.NoError(err)
			require.Equal(r == 3, has, "round %d entry %d", r, i)
		}
	}
}

func TestLivenessAndMembershipRecords(t *testing.T) {
	require := require.New(t)
	db := memdb.New()
	s := open(t, db)
	require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{'g'}, nil))
	_, err := s.Accepted().Membership()
	require.ErrorIs(err, state.ErrNotFound)
	a, b := ids.NodeID{'a'}, ids.NodeID{'b'}
	m := &state.Membership{PChainHeight: 9, Round: 4, Generation: 2, Members: []pinning.Member{{NodeID: a, Weight: 3}}}
	var root ids.ID
	l := layerOn(t, s, nil, func(l *state.Layer) {
		require.NoError(l.Freeze(m, []state.LivenessUpdate{{NodeID: a, Record: state.Liveness{FirstSeen: 4}}, {NodeID: b, Record: state.Liveness{FirstSeen: 4}}}))
		require.NoError(l.Apply(&state.Changes{Round: 9, SigningHash: ids.ID{1}, Liveness: []state.LivenessUpdate{{NodeID: a, Record: state.Liveness{FirstSeen: 4, Heartbeat: 4, HasHeartbeat: true}}}}))
	})
	root = l.Root()
	require.NoError(s.Accept(l, ids.ID{1}, nil))

	s2 := open(t, db) // survives a restart
	got, err := s2.Accepted().Membership()
	require.NoError(err)
	require.Equal(m, got)
	rec, ok, err := s2.Accepted().Liveness(a)
	require.NoError(err)
	require.True(ok)
	require.Equal(state.Liveness{FirstSeen: 4, Heartbeat: 4, HasHeartbeat: true}, rec)
	_, ok, err = s2.Accepted().Liveness(ids.NodeID{'z'})
	require.NoError(err)
	require.False(ok)

	other := layerOn(t, s2, nil, func(l *state.Layer) {
		require.NoError(l.Freeze(&state.Membership{PChainHeight: 9, Round: 4, Generation: 3, Members: m.Members}, nil))
	})
	require.NotEqual(root, other.Root())

	require.NoError(db.Put([]byte{'p'}, []byte{1, 2}))
	_, err = s2.Accepted().Membership()
	require.ErrorIs(err, state.ErrCorrupt)
}

func TestLeasesAndFences(t *testing.T) {
	require := require.New(t)
	db := memdb.New()
	s := open(t, db)
	require.NoError(s.Accept(layerOn(t, s, nil, nil), ids.ID{'g'}, nil))
	_, ok, err := s.Accepted().Lease("c/lock")
	require.NoError(err)
	require.False(ok)
	fence, err := s.Accepted().Fence("c/lock")
	require.NoError(err)
	require.Zero(fence)

	grant := state.Lease{Holder: "m1", Token: 1, ExpiresMs: 10_000}
	l1 := layerOn(t, s, nil, func(l *state.Layer) {
		require.NoError(l.Apply(&state.Changes{Round: 1, SigningHash: ids.ID{1}, Leases: []state.LeaseUpdate{{Range: "c/lock", Lease: &grant, Fence: 1}}}))
	})
	// A child sees its parent's lease; a release in the child deletes the
	// lease but keeps the fence.
	l2 := layerOn(t, s, l1, func(l *state.Layer) {
		got, ok, err := l.Lease("c/lock")
		require.NoError(err)
		require.True(ok)
		require.Equal(grant, got)
		require.NoError(l.Apply(&state.Changes{Round: 1, SigningHash: ids.ID{2}, Leases: []state.LeaseUpdate{{Range: "c/lock"}}}))
	})
	require.NoError(s.Accept(l1, ids.ID{1}, nil))
	require.NoError(s.Accept(l2, ids.ID{2}, nil))

	s2 := open(t, db)
	_, ok, err = s2.Accepted().Lease("c/lock")
	require.NoError(err)
	require.False(ok, "released")
	fence, err = s2.Accepted().Fence("c/lock")
	require.NoError(err)
	require.Equal(uint64(1), fence, "the fence outlives the release")

	require.True(grant.Held(9_999))
	require.False(grant.Held(10_000), "a lease expires at its expiry")

	require.NoError(db.Put([]byte("Lc/x"), []byte{1, 2}))
	_, _, err = s2.Accepted().Lease("c/x")
	require.ErrorIs(err, state.ErrCorrupt)
}
