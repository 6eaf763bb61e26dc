package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/versiondb"
	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
)

var (
	// ErrNotFound is returned by reads of absent manifests, receipts and
	// blocks.
	ErrNotFound = errors.New("state: not found")
	// ErrCorrupt means stored bytes do not decode: the database was written
	// by something else or damaged.
	ErrCorrupt = errors.New("state: corrupt record")
	// ErrNotInitialized means no block (not even genesis) was accepted yet.
	ErrNotInitialized = errors.New("state: no accepted block yet")
	// ErrParentNotAccepted is returned by Accept when the layer's parent is
	// still processing: blocks are accepted in chain order.
	ErrParentNotAccepted = errors.New("state: parent layer not accepted")
	// ErrSealed is returned by writes to a layer whose root was computed.
	ErrSealed = errors.New("state: layer is sealed")
	// ErrNotSealed is returned when a layer is accepted or extended before
	// its root was computed.
	ErrNotSealed = errors.New("state: layer is not sealed")
	// ErrDropped is returned for layers of rejected (or already accepted)
	// blocks.
	ErrDropped = errors.New("state: layer was dropped")
	// ErrWrongHeight is returned when a layer is accepted out of order.
	ErrWrongHeight = errors.New("state: layer height does not follow last accepted")
)

// Reader is read access to chain state: the accepted state or a layer.
type Reader interface {
	// Counter is the next unissued id of a range (0 if never allocated).
	Counter(rangeKey string) (uint64, error)
	Manifest(bucket, key string) (*txs.Manifest, error)
	// Object is an object's newest manifest with its version: the versioned
	// record, or a legacy manifest as version 0; ErrNotFound if neither.
	Object(bucket, key string) (*Object, error)
	// Chunk is what the chain records of a chunk (ChunkFree if nothing).
	Chunk(c txs.ChunkRef) (Chunk, error)
	Receipt(txID ids.ID) (*Receipt, error)
	// Applied reports whether a transaction signed in liveness round round
	// with this signing hash was applied.
	Applied(round uint64, signingHash ids.ID) (bool, error)
	// ReplayPruned is the liveness round below which the replay index holds
	// nothing any more.
	ReplayPruned() (uint64, error)
	// Liveness is a validator's liveness record; ok is false if the chain
	// never recorded it.
	Liveness(nodeID ids.NodeID) (rec Liveness, ok bool, err error)
	// Removal is the chain's decision to remove a validator from the
	// P-chain set; ok is false if there is none.
	Removal(nodeID ids.NodeID) (r Removal, ok bool, err error)
	// Membership is the frozen membership of the newest liveness round, or
	// ErrNotFound before the first block with a P-chain context.
	Membership() (*Membership, error)
	// Lease is the lease of a range as the last block that touched it left
	// it (expired or not: expiry is a matter of the reader's block time);
	// ok is false if nobody holds it.
	Lease(rangeKey string) (l Lease, ok bool, err error)
	// Fence is the last fencing token granted for a range (0: none yet).
	Fence(rangeKey string) (uint64, error)
}

// State owns the database: accepted state, block index and the root of the
// tree of processing layers. Engine-facing methods (NewLayer, Accept,
// Reject) must be called by one goroutine at a time; Accepted, LastAccepted
// and the index reads are safe from any goroutine.
type State struct {
	db     database.Database
	limits txs.Limits

	mu          sync.RWMutex // guards accepted, initialized
	accepted    Accepted
	initialized bool
}

// New opens state on db, restoring the last accepted block if there is one.
func New(db database.Database, limits txs.Limits) (*State, error) {
	s := &State{db: db, limits: limits}
	b, err := db.Get(acceptedKey)
	switch {
	case errors.Is(err, database.ErrNotFound):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("reading last accepted: %w", err)
	}
	a, err := decodeAccepted(b)
	if err != nil {
		return nil, err
	}
	s.accepted, s.initialized = a, true
	return s, nil
}

// LastAccepted returns the last accepted block, or ErrNotInitialized.
func (s *State) LastAccepted() (Accepted, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.initialized {
		return Accepted{}, ErrNotInitialized
	}
	return s.accepted, nil
}

// Accepted reads accepted state only: what the API may show.
func (s *State) Accepted() Reader { return view{db: s.db, limits: s.limits} }

// Block returns an accepted block's bytes.
func (s *State) Block(id ids.ID) ([]byte, error) {
	b, err := s.db.Get(blockKey(id))
	if errors.Is(err, database.ErrNotFound) {
		return nil, fmt.Errorf("%w: block %s", ErrNotFound, id)
	}
	return b, err
}

// BlockIDAtHeight returns the accepted block at height.
func (s *State) BlockIDAtHeight(height uint64) (ids.ID, error) {
	b, err := s.db.Get(heightKey(height))
	if errors.Is(err, database.ErrNotFound) {
		return ids.Empty, fmt.Errorf("%w: no accepted block at height %d", ErrNotFound, height)
	}
	if err != nil {
		return ids.Empty, err
	}
	id, err := ids.ToID(b)
	if err != nil {
		return ids.Empty, fmt.Errorf("%w: height index: %w", ErrCorrupt, err)
	}
	return id, nil
}

// NewLayer starts the layer of a block whose parent's layer is parent, or
// nil for a block whose parent is the last accepted block (or for genesis,
// before anything was accepted). parent must be sealed.
func (s *State) NewLayer(parent *Layer) (*Layer, error) {
	l := &Layer{s: s, changed: make(map[string]struct{})}
	switch {
	case parent == nil || parent.accepted:
		a, err := s.LastAccepted()
		switch {
		case errors.Is(err, ErrNotInitialized):
			l.height, l.parentRoot = 0, ids.Empty
		case err != nil:
			return nil, err
		default:
			if parent != nil && parent.root != a.Root {
				return nil, fmt.Errorf("%w: parent is accepted but not the last accepted block", ErrDropped)
			}
			l.height, l.parentRoot = a.Height+1, a.Root
		}
		l.vdb = versiondb.New(s.db)
	case parent.dropped:
		return nil, ErrDropped
	case !parent.sealed:
		return nil, ErrNotSealed
	default:
		l.parent = parent
		l.height, l.parentRoot = parent.height+1, parent.root
		l.vdb = versiondb.New(parent.vdb)
		parent.children = append(parent.children, l)
	}
	l.view = view{db: l.vdb, limits: s.limits}
	return l, nil
}

// Accept commits l, whose parent must already be accepted, together with the
// block's bytes, its height index and the last-accepted pointer, in one
// database batch: after a crash either all of it is there or none of it.
// The layers of l's children are re-pointed at the accepted database.
func (s *State) Accept(l *Layer, blockID ids.ID, blockBytes []byte) error {
	switch {
	case l.dropped:
		return ErrDropped
	case !l.sealed:
		return ErrNotSealed
	case l.parent != nil:
		return ErrParentNotAccepted
	}
	s.mu.RLock()
	want := uint64(0)
	if s.initialized {
		want = s.accepted.Height + 1
	}
	s.mu.RUnlock()
	if l.height != want {
		return fmt.Errorf("%w: layer height %d, expected %d", ErrWrongHeight, l.height, want)
	}
	batch, err := l.vdb.CommitBatch()
	if err != nil {
		return fmt.Errorf("collecting block %s changes: %w", blockID, err)
	}
	a := Accepted{ID: blockID, Height: l.height, Root: l.root}
	if err := batch.Put(blockKey(blockID), blockBytes); err != nil {
		return err
	}
	if err := batch.Put(heightKey(l.height), blockID[:]); err != nil {
		return err
	}
	if err := batch.Put(acceptedKey, encodeAccepted(a)); err != nil {
		return err
	}
	if err := batch.Write(); err != nil {
		return fmt.Errorf("writing block %s: %w", blockID, err)
	}
	s.mu.Lock()
	s.accepted, s.initialized = a, true
	s.mu.Unlock()

	for _, c := range l.children {
		if c.dropped {
			continue
		}
		if err := c.vdb.SetDatabase(s.db); err != nil {
			return fmt.Errorf("re-pointing child layer: %w", err)
		}
		c.parent = nil
	}
	l.children = nil
	l.accepted = true
	return l.vdb.Close()
}

// Reject drops l and every layer built on it. Nothing of them reaches the
// database.
func (s *State) Reject(l *Layer) {
	if l.dropped || l.accepted {
		return
	}
	l.drop()
	if p := l.parent; p != nil {
		for i, c := range p.children {
			if c == l {
				p.children = append(p.children[:i], p.children[i+1:]...)
				break
			}
		}
	}
}

// view implements Reader over any key-value reader.
type view struct {
	db     database.KeyValueReader
	limits txs.Limits
}

func (v view) Counter(rangeKey string) (uint64, error) {
	b, err := v.db.Get(counterKey(rangeKey))
	if errors.Is(err, database.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: counter of %q has %d bytes", ErrCorrupt, rangeKey, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

func (v view) Manifest(bucket, key string) (*txs.Manifest, error) {
	b, err := v.db.Get(manifestKey(bucket, key))
	if errors.Is(err, database.ErrNotFound) {
		return nil, fmt.Errorf("%w: manifest %s/%s", ErrNotFound, bucket, key)
	}
	if err != nil {
		return nil, err
	}
	m, err := txs.ParseManifest(b, v.limits)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest %s/%s: %w", ErrCorrupt, bucket, key, err)
	}
	return m, nil
}

func (v view) Object(bucket, key string) (*Object, error) {
	b, err := v.db.Get(objectKey(bucket, key))
	switch {
	case err == nil:
		o, err := decodeObject(b, v.limits)
		if err != nil {
			return nil, fmt.Errorf("object %s/%s: %w", bucket, key, err)
		}
		return o, nil
	case !errors.Is(err, database.ErrNotFound):
		return nil, err
	}
	m, err := v.Manifest(bucket, key)
	if err != nil {
		return nil, err
	}
	return &Object{Manifest: *m}, nil
}

func (v view) Chunk(c txs.ChunkRef) (Chunk, error) {
	b, err := v.db.Get(chunkKey(c))
	switch {
	case errors.Is(err, database.ErrNotFound):
		return Chunk{}, nil
	case err != nil:
		return Chunk{}, err
	}
	rec, err := decodeChunk(b)
	if err != nil {
		return Chunk{}, fmt.Errorf("chunk %s#%d: %w", c.Range, c.ID, err)
	}
	return rec, nil
}

func (v view) Receipt(txID ids.ID) (*Receipt, error) {
	b, err := v.db.Get(receiptKey(txID))
	if errors.Is(err, database.ErrNotFound) {
		return nil, fmt.Errorf("%w: receipt of %s", ErrNotFound, txID)
	}
	if err != nil {
		return nil, err
	}
	return decodeReceipt(b)
}

func (v view) Applied(round uint64, signingHash ids.ID) (bool, error) {
	return v.db.Has(replayKey(round, signingHash))
}

func (v view) ReplayPruned() (uint64, error) {
	b, err := v.db.Get(replayPrunedKey)
	if errors.Is(err, database.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: replay bound has %d bytes", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

func (v view) Liveness(nodeID ids.NodeID) (Liveness, bool, error) {
	b, err := v.db.Get(livenessKey(nodeID))
	if errors.Is(err, database.ErrNotFound) {
		return Liveness{}, false, nil
	}
	if err != nil {
		return Liveness{}, false, err
	}
	rec, err := decodeLiveness(b)
	return rec, err == nil, err
}

func (v view) Removal(nodeID ids.NodeID) (Removal, bool, error) {
	b, err := v.db.Get(removalKey(nodeID))
	if errors.Is(err, database.ErrNotFound) {
		return Removal{}, false, nil
	}
	if err != nil {
		return Removal{}, false, err
	}
	r, err := decodeRemoval(b)
	return r, err == nil, err
}

func (v view) Membership() (*Membership, error) {
	b, err := v.db.Get(membershipKey)
	if errors.Is(err, database.ErrNotFound) {
		return nil, fmt.Errorf("%w: no membership recorded yet", ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return decodeMembership(b)
}

func (v view) Lease(rangeKey string) (Lease, bool, error) {
	b, err := v.db.Get(leaseKey(rangeKey))
	if errors.Is(err, database.ErrNotFound) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, err
	}
	l, err := decodeLease(b)
	if err != nil {
		return Lease{}, false, fmt.Errorf("lease of %q: %w", rangeKey, err)
	}
	return l, true, nil
}

func (v view) Fence(rangeKey string) (uint64, error) {
	b, err := v.db.Get(fenceKey(rangeKey))
	if errors.Is(err, database.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: fence of %q has %d bytes", ErrCorrupt, rangeKey, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
