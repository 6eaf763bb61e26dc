package schainfiler

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

// RouterChain is Chain over S-Chain nodes: reads and writes at each
// bucket's owner, writes waited for until accepted.
type RouterChain struct {
	R *client.Router
	// seen is the highest accepted height this store wrote at or read at
	// the bucket's owner: a read away from the owner asks for at least it,
	// so that the store's reads never go back in time. Answers away from
	// the owner never raise it: any node may answer them, and one naming a
	// height the chain never reached would make every honest node refuse
	// the store's next reads.
	seen atomic.Uint64
}

var _ Chain = (*RouterChain)(nil)

// NewRouterChain is Chain through r.
func NewRouterChain(r *client.Router) *RouterChain { return &RouterChain{R: r} }

// saw raises seen to height.
func (c *RouterChain) saw(height uint64) {
	for {
		old := c.seen.Load()
		if height <= old || c.seen.CompareAndSwap(old, height) {
			return
		}
	}
}

// ownerGone reports whether a read at the owner failed because the owner
// cannot answer: another node's accepted state then answers, from a node
// that accepted everything this store saw (it may lack the newest blocks
// of other writers for a moment) until the range moves.
func ownerGone(err error) bool {
	return errors.Is(err, client.ErrTransport) || errors.Is(err, client.ErrNotReady)
}

// Get reads at the bucket's owner, or at any node that accepted what this
// store saw while the owner cannot answer.
func (c *RouterChain) Get(ctx context.Context, bucket, key string) (Record, error) {
	m, err := c.R.GetManifestAtOwner(ctx, bucket, key)
	switch {
	case err == nil:
		c.saw(m.Head.AcceptedHeight)
	case ownerGone(err):
		m, err = c.R.GetManifestAt(ctx, bucket, key, c.seen.Load())
	}
	if errors.Is(err, client.ErrNotFound) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, err
	}
	rec := Record{Key: key, Version: m.Version, Deleted: m.Manifest.Deleted, Attributes: m.Attributes}
	for _, ch := range m.Manifest.Chunks {
		rec.Chunks = append(rec.Chunks, Chunk{Range: ch.Range, ID: ch.ID, Size: ch.Size})
	}
	return rec, nil
}

// Put writes at the bucket's owner and waits until accepted.
func (c *RouterChain) Put(ctx context.Context, bucket string, w Write) (Written, error) {
	args := api.PutManifestArgs{Bucket: bucket, Key: w.Key, Deleted: w.Deleted, Attributes: w.Attributes, Adopt: w.Adopt, Wait: api.WaitAccepted, ThenGet: w.ThenGet, OwnEntry: true}
	for _, ch := range w.Chunks {
		args.Chunks = append(args.Chunks, api.Chunk{Range: ch.Range, ID: ch.ID, Size: ch.Size})
		args.Size += ch.Size
	}
	switch {
	case w.IfAbsent:
		args.Condition = &api.Condition{Kind: api.IfAbsent}
	case w.IfVersion != 0:
		args.Condition = &api.Condition{Kind: api.IfVersion, Version: w.IfVersion}
	}
	reply, err := c.R.PutManifest(ctx, args)
	if errors.Is(err, client.ErrPreconditionFailed) {
		return Written{}, errors.Join(ErrPreconditionFailed, err)
	}
	if err != nil {
		return Written{}, err
	}
	if rc := reply.Receipt; rc != nil {
		c.saw(max(rc.Height, rc.Head.AcceptedHeight))
	}
	out := Written{Version: reply.Version, Then: thenRecord(w.ThenGet, reply.Then)}
	if out.Then != nil && reply.Then.Manifest != nil {
		c.saw(reply.Then.Manifest.Head.AcceptedHeight)
	}
	return out, nil
}

// thenRecord is the record a write's reply brings back for the key it
// asked: nil when it asked none, or the reply answers none or another key
// (the store then reads on its own); a deleted record for no manifest.
func thenRecord(asked string, t *api.ThenReply) *Record {
	switch {
	case asked == "" || t == nil || t.Key != asked:
		return nil
	case t.Manifest == nil:
		return &Record{Key: asked, Deleted: true}
	}
	m := t.Manifest
	return &Record{Key: asked, Version: m.Version, Deleted: m.Manifest.Deleted, Attributes: m.Attributes}
}

// List reads a page at the bucket's owner, or at any node that accepted
// what this store saw while the owner cannot answer.
func (c *RouterChain) List(ctx context.Context, bucket, prefix, startAfter string, limit int) (Page, error) {
	args := api.ListManifestsArgs{Bucket: bucket, Prefix: prefix, StartAfter: startAfter, Limit: limit}
	rep, err := c.R.ListManifestsAtOwner(ctx, args)
	switch {
	case err == nil:
		c.saw(rep.Head.AcceptedHeight)
	case ownerGone(err):
		args.MinHeight = c.seen.Load()
		rep, err = c.R.ListManifests(ctx, args)
	}
	if err != nil {
		return Page{}, err
	}
	p := Page{Truncated: rep.Truncated, Next: rep.Next, Records: make([]Record, 0, len(rep.Manifests))}
	for _, m := range rep.Manifests {
		p.Records = append(p.Records, Record{Key: m.Manifest.Key, Version: m.Version, Attributes: m.Attributes})
	}
	return p, nil
}

// Released reads the oldest released chunks of bucket.
func (c *RouterChain) Released(ctx context.Context, bucket string, limit int) ([]Chunk, error) {
	rep, err := c.R.ListReleased(ctx, api.ListReleasedArgs{Bucket: bucket, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]Chunk, 0, len(rep.Released))
	for _, r := range rep.Released {
		out = append(out, Chunk{Range: r.Range, ID: r.ID, Size: r.Size})
	}
	return out, nil
}

// Reclaim acknowledges released chunks at their bucket's owner.
func (c *RouterChain) Reclaim(ctx context.Context, chunks []Chunk) error {
	refs := make([]api.ChunkRef, 0, len(chunks))
	for _, ch := range chunks {
		refs = append(refs, api.ChunkRef{Range: ch.Range, ID: ch.ID})
	}
	_, err := c.R.Reclaim(ctx, api.ReclaimArgs{Chunks: refs})
	return err
}
