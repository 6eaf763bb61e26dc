package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/versiondb"
	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
)

const rootDomain = "schain/state/root/v1"

// Layer holds one processing block's writes on top of its parent's layer.
// Reads see the parent chain; writes stay here until Accept. A Layer is not
// safe for concurrent writes.
type Layer struct {
	view
	s        *State
	vdb      *versiondb.Database
	parent   *Layer // nil once the parent is accepted
	children []*Layer

	height     uint64
	parentRoot ids.ID
	changed    map[string]struct{}

	sealed   bool
	root     ids.ID
	accepted bool
	dropped  bool
}

// Changes is everything one valid transaction writes. Execution computes it
// without writing, so a builder can drop an invalid transaction without
// undoing anything.
type Changes struct {
	// Counters are new next-unissued values, applied in order.
	Counters []CounterUpdate
	// Manifests are written (a tombstone is written, not deleted, so the
	// deletion is itself a committed fact).
	Manifests []*txs.Manifest
	Receipt   *Receipt
	// Round (the liveness round the transaction was signed in) and
	// SigningHash enter the replay index.
	Round       uint64
	SigningHash ids.ID
	// Liveness records are written whole.
	Liveness []LivenessUpdate
	// Objects are versioned manifests written whole, in order (kind 4).
	// Writing one drops the object's legacy manifest, if any: an object
	// lives in one table.
	Objects []*Object
	// Chunks are chunk records set, in order.
	Chunks []ChunkUpdate
	// Released adds chunks to their buckets' released lists, Reclaimed
	// takes them off.
	Released  []ReleasedUpdate
	Reclaimed []ReleasedUpdate
	// Leases are written whole, or deleted.
	Leases []LeaseUpdate
}

// LeaseUpdate sets a range's lease (nil: released) and, when Fence is not
// zero, its last fencing token (a new grant).
type LeaseUpdate struct {
	Range string
	Lease *Lease
	Fence uint64
}

// ChunkUpdate sets a chunk's record.
type ChunkUpdate struct {
	Ref    txs.ChunkRef
	Record Chunk
}

// ReleasedUpdate is one entry of a bucket's released list: the chunk
// released at Height (its size and hash matter only when it is added).
type ReleasedUpdate struct {
	Height uint64
	Chunk  txs.Chunk
}

// LivenessUpdate sets one validator's liveness record.
type LivenessUpdate struct {
	NodeID ids.NodeID
	Record Liveness
}

// RemovalUpdate records (or, with Delete, deletes) a validator's removal
// decision.
type RemovalUpdate struct {
	NodeID  ids.NodeID
	Removal Removal
	Delete  bool
}

// CounterUpdate sets a range's next unissued id.
type CounterUpdate struct {
	Range string
	Next  uint64
}

// Height is the height of the block this layer belongs to.
func (l *Layer) Height() uint64 { return l.height }

// Root is the state root, valid once sealed.
func (l *Layer) Root() ids.ID { return l.root }

// Apply writes one transaction's changes.
func (l *Layer) Apply(c *Changes) error {
	if err := l.writable(); err != nil {
		return err
	}
	for _, u := range c.Counters {
		if err := l.put(counterKey(u.Range), binary.BigEndian.AppendUint64(nil, u.Next)); err != nil {
			return err
		}
	}
	for _, m := range c.Manifests {
		if err := l.put(manifestKey(m.Bucket, m.Key), txs.EncodeManifest(m)); err != nil {
			return err
		}
	}
	if err := l.putLiveness(c.Liveness); err != nil {
		return err
	}
	if err := l.putLeases(c.Leases); err != nil {
		return err
	}
	if err := l.putObjects(c); err != nil {
		return err
	}
	if c.Receipt != nil {
		b, err := encodeReceipt(c.Receipt)
		if err != nil {
			return err
		}
		if err := l.put(receiptKey(c.Receipt.TxID), b); err != nil {
			return err
		}
	}
	return l.put(replayKey(c.Round, c.SigningHash), []byte{})
}

// Freeze records m as the membership in force from this block on, with the
// first-seen records of validators new to the chain.
func (l *Layer) Freeze(m *Membership, seen []LivenessUpdate, removals ...RemovalUpdate) error {
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.putLiveness(seen); err != nil {
		return err
	}
	for _, u := range removals {
		if u.Delete {
			if err := l.del(removalKey(u.NodeID)); err != nil {
				return err
			}
			continue
		}
		if err := l.put(removalKey(u.NodeID), encodeRemoval(u.Removal)); err != nil {
			return err
		}
	}
	b, err := encodeMembership(m)
	if err != nil {
		return err
	}
	return l.put(membershipKey, b)
}

func (l *Layer) putObjects(c *Changes) error {
	for _, o := range c.Objects {
		m := &o.Manifest
		if err := l.put(objectKey(m.Bucket, m.Key), encodeObject(o)); err != nil {
			return err
		}
		legacy := manifestKey(m.Bucket, m.Key)
		switch had, err := l.vdb.Has(legacy); {
		case err != nil:
			return err
		case had:
			if err := l.del(legacy); err != nil {
				return err
			}
		}
	}
	for _, u := range c.Chunks {
		if err := l.put(chunkKey(u.Ref), encodeChunk(u.Record)); err != nil {
			return err
		}
	}
	for _, u := range c.Released {
		if err := l.put(releasedKey(u.Chunk.Bucket(), u.Height, u.Chunk.Ref()), encodeReleased(u.Chunk)); err != nil {
			return err
		}
	}
	for _, u := range c.Reclaimed {
		if err := l.del(releasedKey(u.Chunk.Bucket(), u.Height, u.Chunk.Ref())); err != nil {
			return err
		}
	}
	return nil
}

func (l *Layer) putLiveness(us []LivenessUpdate) error {
	for _, u := range us {
		if err := l.put(livenessKey(u.NodeID), encodeLiveness(u.Record)); err != nil {
			return err
		}
	}
	return nil
}

func (l *Layer) putLeases(us []LeaseUpdate) error {
	for _, u := range us {
		if u.Fence != 0 {
			if err := l.put(fenceKey(u.Range), binary.BigEndian.AppendUint64(nil, u.Fence)); err != nil {
				return err
			}
		}
		var err error
		if u.Lease == nil {
			err = l.del(leaseKey(u.Range))
		} else {
			err = l.put(leaseKey(u.Range), encodeLease(*u.Lease))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// PruneReplay forgets at most limit replay entries of liveness rounds
// before round, oldest first, and returns how many it deleted. A
// transaction expires a fixed number of rounds after the one it was signed
// in and block rounds never decrease, so an entry below the caller's bound
// can never match again. Deleting at most limit per block keeps every
// block's cost bounded, whatever burst came before: with limit above the
// entries one block can add, the backlog only shrinks.
func (l *Layer) PruneReplay(round uint64, limit int) (int, error) {
	if err := l.writable(); err != nil {
		return 0, err
	}
	if limit < 1 {
		return 0, fmt.Errorf("pruning the replay index: limit %d is not positive", limit)
	}
	done, err := l.ReplayPruned()
	if err != nil || round <= done {
		return 0, err
	}
	end := replayKey(round, ids.Empty)
	it := l.vdb.NewIteratorWithPrefix([]byte{tagReplay})
	var stale [][]byte
	complete := true
	for it.Next() && bytes.Compare(it.Key(), end) < 0 {
		if len(stale) == limit {
			complete = false
			break
		}
		stale = append(stale, slices.Clone(it.Key()))
	}
	err = it.Error()
	it.Release()
	if err != nil {
		return 0, fmt.Errorf("scanning the replay index: %w", err)
	}
	for _, k := range stale {
		if err := l.del(k); err != nil {
			return 0, err
		}
	}
	// Everything below the bound is gone when the scan completed;
	// otherwise everything below the last deleted entry's round is.
	if !complete {
		round = replayRound(stale[len(stale)-1])
	}
	if round > done {
		if err := l.put(replayPrunedKey, binary.BigEndian.AppendUint64(nil, round)); err != nil {
			return 0, err
		}
	}
	return len(stale), nil
}

// Seal computes the state root and freezes the layer: SHA-256 over the
// parent's root, the height, and every changed key with its new value (or a
// deletion mark) in key order. Its cost depends only on the changes.
func (l *Layer) Seal() (ids.ID, error) {
	if err := l.writable(); err != nil {
		return ids.Empty, err
	}
	keys := make([]string, 0, len(l.changed))
	for k := range l.changed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	var buf [8]byte
	h.Write([]byte(rootDomain))
	h.Write(l.parentRoot[:])
	binary.BigEndian.PutUint64(buf[:], l.height)
	h.Write(buf[:])
	binary.BigEndian.PutUint64(buf[:], uint64(len(keys)))
	h.Write(buf[:])
	for _, k := range keys {
		v, err := l.vdb.Get([]byte(k))
		present := byte(1)
		switch {
		case errors.Is(err, database.ErrNotFound):
			present, v = 0, nil
		case err != nil:
			return ids.Empty, err
		}
		binary.BigEndian.PutUint32(buf[:4], uint32(len(k)))
		h.Write(buf[:4])
		h.Write([]byte(k))
		h.Write([]byte{present})
		binary.BigEndian.PutUint32(buf[:4], uint32(len(v)))
		h.Write(buf[:4])
		h.Write(v)
	}
	h.Sum(l.root[:0])
	l.sealed = true
	return l.root, nil
}

// Changed is the number of keys this layer writes.
func (l *Layer) Changed() int { return len(l.changed) }

func (l *Layer) writable() error {
	switch {
	case l.dropped || l.accepted:
		return ErrDropped
	case l.sealed:
		return ErrSealed
	}
	return nil
}

func (l *Layer) put(k, v []byte) error {
	l.changed[string(k)] = struct{}{}
	return l.vdb.Put(k, v)
}

func (l *Layer) del(k []byte) error {
	l.changed[string(k)] = struct{}{}
	return l.vdb.Delete(k)
}

func (l *Layer) drop() {
	l.dropped = true
	_ = l.vdb.Close()
	for _, c := range l.children {
		c.drop()
	}
	l.children = nil
}
