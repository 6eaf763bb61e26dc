package execute

import (
	"errors"
	"fmt"

	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
)

var (
	// ErrSuperseded: a PutManifestTx after the manifests upgrade, which
	// replaced it with ManifestTx (versions, preconditions, chunk binding).
	ErrSuperseded = errcode.New(errcode.Rejected, "superseded", "execute: putManifest (kind 2) is replaced by manifest (kind 4) from the manifests upgrade on")

	// The outcomes of a manifest or reclaim entry that writes nothing. They
	// refuse the entry, not the transaction: its receipt entry carries the
	// reason and the detail.

	// ErrPreconditionFailed: the entry's condition does not hold for the
	// object's current version.
	ErrPreconditionFailed = errcode.New(errcode.PreconditionFailed, "precondition_failed", "execute: the object's current version fails the write's condition")
	// ErrChunkInUse: a chunk of the manifest is bound to another live
	// object.
	ErrChunkInUse = errcode.New(errcode.Conflict, "chunk_in_use", "execute: a chunk of the manifest belongs to another live object")
	// ErrChunkReleased: a chunk of the manifest was released (its object
	// overwritten or deleted) and may be reclaimed by now.
	ErrChunkReleased = errcode.New(errcode.Conflict, "chunk_released", "execute: a chunk of the manifest was released by the object that held it")
	// ErrNotReleased: a reclaim entry names a chunk that is not on its
	// bucket's released list (live, never bound, or reclaimed already).
	ErrNotReleased = errcode.New(errcode.Conflict, "not_released", "execute: the chunk is not on its bucket's released list")
)

// versionBlock is the shift of the block height in a version: a version is
// at least the height of the block that wrote it times 2^24, so versions of
// an object stay unique even if its tombstone were ever pruned.
const versionBlock = 24

// NextVersion is the version a write at height gives an object whose
// current record is cur (nil: none): above cur's, and at least height ×
// 2^24.
func NextVersion(cur *state.Object, height uint64) uint64 {
	v := max(height<<versionBlock, 1)
	if cur != nil {
		v = max(v, cur.Version+1)
	}
	return v
}

// Holds reports whether a write's condition holds for the object's current
// record (nil: none).
func Holds(c txs.Condition, cur *state.Object) bool {
	switch c.Kind {
	case txs.IfAny:
		return true
	case txs.IfAbsent:
		return !cur.Live()
	case txs.IfVersion:
		return cur.Live() && cur.Version == c.Version
	case txs.IfContentHash:
		return cur.Live() && cur.Manifest.ContentHash == c.ContentHash
	}
	return false
}

// LiveVersion is an object's version if it is live, else 0.
func LiveVersion(cur *state.Object) uint64 {
	if cur.Live() {
		return cur.Version
	}
	return 0
}

type objectName struct{ bucket, key string }

// objects overlays what earlier entries of one transaction wrote on the
// state it executes on.
type objects struct {
	e       *executor
	written map[objectName]*state.Object
	chunks  map[txs.ChunkRef]state.Chunk
}

func (o *objects) object(bucket, key string) (*state.Object, error) {
	if w, ok := o.written[objectName{bucket, key}]; ok {
		return w, nil
	}
	cur, err := o.e.r.Object(bucket, key)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return nil, err
	}
	return cur, nil
}

func (o *objects) chunk(ref txs.ChunkRef) (state.Chunk, error) {
	if c, ok := o.chunks[ref]; ok {
		return c, nil
	}
	return o.e.r.Chunk(ref)
}

func (o *objects) setChunk(ref txs.ChunkRef, c state.Chunk) {
	o.chunks[ref] = c
	o.e.out.Chunks = append(o.e.out.Chunks, state.ChunkUpdate{Ref: ref, Record: c})
}

// refusal is an entry that writes nothing, with the receipt fields saying
// why.
type refusal struct {
	err     error
	detail  string
	current uint64
}

// Manifest writes versioned manifests in entry order.
func (e *executor) Manifest(t *txs.ManifestTx) error {
	if !e.c.Rules.Manifests {
		return fmt.Errorf("%w: manifest at height %d", ErrNotActivated, e.c.Height)
	}
	o := &objects{e: e, written: make(map[objectName]*state.Object), chunks: make(map[txs.ChunkRef]state.Chunk)}
	for i := range t.Entries {
		en := &t.Entries[i]
		rc := state.ReceiptEntry{Bucket: en.Bucket, Key: en.Key, Deleted: en.Deleted}
		version, ref, err := o.write(en)
		switch {
		case err != nil:
			return fmt.Errorf("entry %d: %w", i, err)
		case ref != nil:
			_, rc.Refused = errcode.Of(ref.err)
			rc.Detail, rc.Current = ref.detail, ref.current
		default:
			rc.Version = version
		}
		e.out.Receipt.Entries = append(e.out.Receipt.Entries, rc)
	}
	return nil
}

// write applies one entry: its condition, its chunks' binding, the release
// of the chunks the object no longer names, and the new record. A refused
// entry changes nothing.
func (o *objects) write(en *txs.ManifestEntry) (uint64, *refusal, error) {
	cur, err := o.object(en.Bucket, en.Key)
	if err != nil {
		return 0, nil, err
	}
	if !Holds(en.Condition, cur) {
		return 0, &refusal{
			err:     ErrPreconditionFailed,
			detail:  fmt.Sprintf("%s/%s is at version %d, the write requires %s", en.Bucket, en.Key, LiveVersion(cur), describe(en.Condition)),
			current: LiveVersion(cur),
		}, nil
	}
	if en.Deleted && !cur.Live() {
		return 0, nil, nil // nothing to delete: no record, no version
	}
	bind, ref, err := o.checkChunks(en)
	if err != nil || ref != nil {
		return 0, ref, err
	}
	height := o.e.c.Height
	next := &state.Object{Manifest: en.Manifest, Attributes: en.Attributes, Version: NextVersion(cur, height), Height: height}
	if err := o.release(cur, next); err != nil {
		return 0, nil, err
	}
	for _, c := range bind {
		o.setChunk(c, state.Chunk{Status: state.ChunkLive, Bucket: en.Bucket, Key: en.Key})
	}
	o.written[objectName{en.Bucket, en.Key}] = next
	o.e.out.Objects = append(o.e.out.Objects, next)
	return next.Version, nil, nil
}

// checkChunks returns the chunks of the entry that are not bound to it yet:
// every chunk must be allocated, and either free, bound to this same
// object, or (when the entry adopts) bound to another live object.
func (o *objects) checkChunks(en *txs.ManifestEntry) ([]txs.ChunkRef, *refusal, error) {
	var bind []txs.ChunkRef
	for j, ch := range en.Chunks {
		next, err := o.e.counter(ch.Range)
		if err != nil {
			return nil, nil, err
		}
		if ch.ID >= next {
			return nil, &refusal{err: ErrUnallocatedChunk, detail: fmt.Sprintf("chunk %d: %s#%d (next unissued id is %d)", j, ch.Range, ch.ID, next)}, nil
		}
		rec, err := o.chunk(ch.Ref())
		if err != nil {
			return nil, nil, err
		}
		switch rec.Status {
		case state.ChunkFree:
			bind = append(bind, ch.Ref())
		case state.ChunkLive:
			switch {
			case rec.Bucket == en.Bucket && rec.Key == en.Key:
			case en.Adopt:
				bind = append(bind, ch.Ref()) // moves here
			default:
				return nil, &refusal{err: ErrChunkInUse, detail: fmt.Sprintf("chunk %d: %s#%d belongs to %s/%s", j, ch.Range, ch.ID, rec.Bucket, rec.Key)}, nil
			}
		default:
			return nil, &refusal{err: ErrChunkReleased, detail: fmt.Sprintf("chunk %d: %s#%d was released at height %d (%s)", j, ch.Range, ch.ID, rec.Height, rec.Status)}, nil
		}
	}
	return bind, nil, nil
}

// release puts the chunks bound to cur that next no longer names on their
// bucket's released list. Chunks of a legacy manifest were never bound and
// stay where they are: without a binding nothing proves no other object
// names them.
func (o *objects) release(cur, next *state.Object) error {
	if !cur.Live() {
		return nil
	}
	kept := make(map[txs.ChunkRef]struct{}, len(next.Manifest.Chunks))
	for _, ch := range next.Manifest.Chunks {
		kept[ch.Ref()] = struct{}{}
	}
	for _, ch := range cur.Manifest.Chunks {
		if _, ok := kept[ch.Ref()]; ok {
			continue
		}
		rec, err := o.chunk(ch.Ref())
		if err != nil {
			return err
		}
		if rec.Status != state.ChunkLive || rec.Bucket != cur.Manifest.Bucket || rec.Key != cur.Manifest.Key {
			continue
		}
		height := o.e.c.Height
		o.setChunk(ch.Ref(), state.Chunk{Status: state.ChunkReleased, Height: height})
		o.e.out.Released = append(o.e.out.Released, state.ReleasedUpdate{Height: height, Chunk: ch})
	}
	return nil
}

func describe(c txs.Condition) string {
	switch c.Kind {
	case txs.IfAbsent:
		return "none live"
	case txs.IfVersion:
		return fmt.Sprintf("version %d", c.Version)
	case txs.IfContentHash:
		return fmt.Sprintf("content hash %s", c.ContentHash)
	}
	return c.Kind.String()
}

// Reclaim takes released chunks off their buckets' released lists for
// good.
func (e *executor) Reclaim(t *txs.ReclaimTx) error {
	if !e.c.Rules.Manifests {
		return fmt.Errorf("%w: reclaim at height %d", ErrNotActivated, e.c.Height)
	}
	o := &objects{e: e, chunks: make(map[txs.ChunkRef]state.Chunk)}
	for _, ref := range t.Entries {
		rc := state.ReceiptEntry{Range: ref.Range, ID: ref.ID}
		rec, err := o.chunk(ref)
		if err != nil {
			return err
		}
		if rec.Status != state.ChunkReleased {
			_, rc.Refused = errcode.Of(ErrNotReleased)
			rc.Detail = fmt.Sprintf("%s#%d is %s", ref.Range, ref.ID, rec.Status)
		} else {
			o.setChunk(ref, state.Chunk{Status: state.ChunkReclaimed, Height: rec.Height})
			e.out.Reclaimed = append(e.out.Reclaimed, state.ReleasedUpdate{Height: rec.Height, Chunk: txs.Chunk{Range: ref.Range, ID: ref.ID}})
		}
		e.out.Receipt.Entries = append(e.out.Receipt.Entries, rc)
	}
	return nil
}
