// Package objects puts objects on SeaweedFS volume servers in the design's
// write order (DESIGN_pinned_writer.md, hard blocker #3): a committed
// manifest never points at a blob that does not exist.
//
//  1. Allocate: the masters (in schain mode) hand out file keys S-Chain
//     committed, one per chunk, from the range of the volume they picked.
//  2. Write: every chunk goes to the volume server, which answers once each
//     replica of the volume holds it; then every replica the masters list
//     is asked for the chunk, and the write counts only if the replica
//     placement's number of copies answer with its size.
//  3. Commit: the manifest names the chunks by their S-Chain ranges and
//     ids, with the caller's precondition, and is waited for until
//     accepted.
//
// A failure before the commit, or a commit the chain refuses, leaves no
// manifest: Put answers an *OrphanedError naming the allocated file ids,
// blobs no manifest points at, for a blob store to reclaim. A commit whose
// outcome the client cannot know (a wait that ran out, a node lost after
// sending) answers ErrCommitUnknown with the transaction to poll: those
// blobs are not orphans yet.
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package objects

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/txs"
)

var (
	// ErrCommitUnknown: the manifest's transaction was sent but its fate is
	// not known; poll its receipt before calling its blobs orphans.
	ErrCommitUnknown = errors.New("objects: the manifest's commit outcome is unknown")
	// ErrTooFewCopies: a chunk's write was acknowledged, but fewer
	// replicas than the placement asks for hold it.
	ErrTooFewCopies = errors.New("objects: fewer copies of a chunk than the replica placement asks for")

	errBadConfig = errors.New("objects: invalid config")
)

// Config is where objects go.
type Config struct {
	// Prefix is the masters' schain_prefix: chunk ids come from its key
	// ranges (schainseq.KeyRange), so it is also the bucket the manifests
	// are written in.
	Prefix string
	// Band is the masters' schain_volume_band (volume ids per key range).
	Band uint32
	// Collection is the SeaweedFS collection the chunks go to.
	Collection string
	// ChunkSize is the most bytes of one chunk.
	ChunkSize int
	// Copies is how many volume servers must hold every chunk before the
	// manifest is committed: 1 + the digits of the replica placement the
	// masters' client asks for (seaweed.Config.Replication).
	Copies int
	// Timeout bounds one chunk's write and check.
	Timeout time.Duration
}

// DefaultConfig puts objects in 4 MiB chunks under prefix, each held by
// copies volume servers.
func DefaultConfig(prefix string, copies int) Config {
	return Config{Prefix: prefix, Band: 1, Collection: prefix, ChunkSize: 4 << 20, Copies: copies, Timeout: 30 * time.Second}
}

func (c Config) verify() error {
	if err := txs.VerifyBucket(c.Prefix, txs.DefaultLimits()); err != nil {
		return fmt.Errorf("%w: prefix: %w", errBadConfig, err)
	}
	if c.Collection == "" || c.ChunkSize < 1 || c.Copies < 1 || c.Timeout <= 0 {
		return fmt.Errorf("%w: a collection, and a positive chunk size, number of copies and timeout", errBadConfig)
	}
	return nil
}

// Writer puts objects. It is safe for concurrent use.
type Writer struct {
	cfg   Config
	weed  *seaweed.Client
	chain *client.Router
	hc    *http.Client
}

// New writes through weed's masters and chain's nodes.
func New(cfg Config, weed *seaweed.Client, chain *client.Router) (*Writer, error) {
	if err := cfg.verify(); err != nil {
		return nil, err
	}
	return &Writer{cfg: cfg, weed: weed, chain: chain, hc: &http.Client{Timeout: cfg.Timeout}}, nil
}

// Put is a committed object.
type Put struct {
	Key     string
	Version uint64
	TxID    api.ID
	Chunks  []api.Chunk
	// Fids are the chunks' SeaweedFS file ids, in order.
	Fids []string
}

// OrphanedError is a Put that left no manifest: Fids (and Chunks, their
// S-Chain names) were allocated, and perhaps written, but nothing points
// at them.
type OrphanedError struct {
	Key    string
	Fids   []string
	Chunks []api.ChunkRef
	Err    error
}

func (e *OrphanedError) Error() string {
	return fmt.Sprintf("objects: %s was not committed, %d allocated file ids are orphaned (%s): %v", e.Key, len(e.Fids), strings.Join(e.Fids, " "), e.Err)
}

func (e *OrphanedError) Unwrap() error { return e.Err }

// Put writes size bytes of body as the object key, in the write order,
// under condition cond.
func (w *Writer) Put(ctx context.Context, key string, body io.Reader, size int64, cond api.Condition) (*Put, error) {
	args := api.PutManifestArgs{Bucket: w.cfg.Prefix, Key: key, Size: uint64(size), Wait: api.WaitAccepted, Condition: &cond, OwnEntry: true}
	var a seaweed.Assignment
	var fids []string
	if n := (size + int64(w.cfg.ChunkSize) - 1) / int64(w.cfg.ChunkSize); n > 0 {
		var err error
		if a, err = w.weed.Assign(ctx, w.cfg.Collection, uint64(n)); err != nil {
			return nil, fmt.Errorf("objects: allocating %d chunks of %s: %w", n, key, err)
		}
		if fids, err = w.writeChunks(ctx, a, int(n), body, size, &args); err != nil {
			return nil, w.orphaned(key, a, err)
		}
	}
	reply, err := w.chain.PutManifest(ctx, args)
	if err != nil {
		return nil, w.commitFailed(key, a, reply, err)
	}
	return &Put{Key: key, Version: reply.Version, TxID: reply.TxID, Chunks: args.Chunks, Fids: fids}, nil
}

// writeChunks writes n chunks of body at the assigned keys and names them
// in args, with the object's content hash.
func (w *Writer) writeChunks(ctx context.Context, a seaweed.Assignment, n int, body io.Reader, size int64, args *api.PutManifestArgs) ([]string, error) {
	if a.Count < uint64(n) {
		return nil, fmt.Errorf("the masters assigned %d keys of %d", a.Count, n)
	}
	whole := sha256.New()
	buf := make([]byte, w.cfg.ChunkSize)
	fids := make([]string, 0, n)
	for i := range n {
		chunk := buf[:min(int64(w.cfg.ChunkSize), size-int64(i)*int64(w.cfg.ChunkSize))]
		if _, err := io.ReadFull(body, chunk); err != nil {
			return nil, fmt.Errorf("reading chunk %d: %w", i, err)
		}
		fid := a.FileID
		fid.Key += uint64(i)
		if err := w.writeChunk(ctx, a.URL, fid, chunk); err != nil {
			return nil, fmt.Errorf("chunk %d: %w", i, err)
		}
		whole.Write(chunk)
		args.Chunks = append(args.Chunks, api.Chunk{Range: w.keyRange(fid.Volume), ID: fid.Key, Size: uint64(len(chunk)), Hash: sha256.Sum256(chunk)})
		fids = append(fids, fid.String())
	}
	copy(args.ContentHash[:], whole.Sum(nil))
	return fids, nil
}

func (w *Writer) keyRange(vid uint32) string {
	return schainseq.KeyRange(w.cfg.Prefix, vid, w.cfg.Band)
}

// writeChunk writes one chunk and checks that enough copies hold it.
func (w *Writer) writeChunk(ctx context.Context, url string, fid seaweed.FileID, chunk []byte) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	if err := seaweed.Write(ctx, w.hc, url, fid, chunk); err != nil {
		return err
	}
	locations, err := w.weed.Lookup(ctx, fid.Volume)
	if err != nil {
		return fmt.Errorf("looking up the copies of volume %d: %w", fid.Volume, err)
	}
	held := 0
	var errs []error
	for _, loc := range locations {
		size, err := seaweed.Stat(ctx, w.hc, loc, fid)
		switch {
		case err != nil:
			errs = append(errs, err)
		case size == int64(len(chunk)):
			held++
		default:
			errs = append(errs, fmt.Errorf("%s holds %d bytes of %s, not %d", loc, size, fid, len(chunk)))
		}
	}
	if held < w.cfg.Copies {
		return fmt.Errorf("%w: %s on %d of %d (locations %v): %w", ErrTooFewCopies, fid, held, w.cfg.Copies, locations, errors.Join(errs...))
	}
	return nil
}

// orphaned names every key of an assignment: allocated, and perhaps
// written, with no manifest.
func (w *Writer) orphaned(key string, a seaweed.Assignment, err error) *OrphanedError {
	e := &OrphanedError{Key: key, Err: err}
	for i := range a.Count {
		fid := a.FileID
		fid.Key += i
		e.Fids = append(e.Fids, fid.String())
		e.Chunks = append(e.Chunks, api.ChunkRef{Range: w.keyRange(fid.Volume), ID: fid.Key})
	}
	return e
}

// commitFailed tells a refused commit (no manifest: the blobs are orphans)
// from one whose outcome is unknown.
func (w *Writer) commitFailed(key string, a seaweed.Assignment, reply *api.PutManifestReply, err error) error {
	if errors.Is(err, client.ErrTimeout) || errors.Is(err, client.ErrTransport) {
		var txID api.ID
		if reply != nil {
			txID = reply.TxID
		}
		return fmt.Errorf("%w: %s (transaction %s): %w", ErrCommitUnknown, key, txID, err)
	}
	return w.orphaned(key, a, fmt.Errorf("committing the manifest: %w", err))
}
