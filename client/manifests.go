package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/s-chain/schain/api"
)

var errNoChunks = errors.New("reclaim names no chunk")

// ListManifests reads one page of a bucket's live objects in key order.
func (c *Client) ListManifests(ctx context.Context, args api.ListManifestsArgs) (*api.ListManifestsReply, error) {
	reply := new(api.ListManifestsReply)
	return reply, c.call(ctx, "listManifests", args, reply, false)
}

// ListReleased reads one page of a bucket's released chunks.
func (c *Client) ListReleased(ctx context.Context, args api.ListReleasedArgs) (*api.ListReleasedReply, error) {
	reply := new(api.ListReleasedReply)
	return reply, c.call(ctx, "listReleased", args, reply, false)
}

// Reclaim acknowledges reclaimed chunks; the node must own their bucket.
func (c *Client) Reclaim(ctx context.Context, args api.ReclaimArgs) (*api.ReclaimReply, error) {
	reply := new(api.ReclaimReply)
	return reply, c.call(ctx, "reclaim", args, reply, args.Wait.Waits())
}

// ListManifests asks any healthy endpoint.
func (r *Router) ListManifests(ctx context.Context, args api.ListManifestsArgs) (*api.ListManifestsReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.ListManifestsReply, error) {
		return e.c.ListManifests(ctx, args)
	})
}

// ListReleased asks any healthy endpoint.
func (r *Router) ListReleased(ctx context.Context, args api.ListReleasedArgs) (*api.ListReleasedReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.ListReleasedReply, error) {
		return e.c.ListReleased(ctx, args)
	})
}

// Reclaim acknowledges reclaimed chunks at the owner of their bucket (all
// of them in one bucket).
func (r *Router) Reclaim(ctx context.Context, args api.ReclaimArgs) (*api.ReclaimReply, error) {
	if len(args.Chunks) == 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParams, errNoChunks)
	}
	return write(ctx, r, args.Chunks[0].Bucket(), func(ctx context.Context, e *endpoint) (*api.ReclaimReply, error) {
		return e.c.Reclaim(ctx, args)
	})
}

// GetManifestAtOwner reads bucket/key at the bucket's owner. An owner
// answers a write waited for only once it accepted it, so a reader there
// sees every write acknowledged before its read, whoever made it. The read
// asks for the owner (api.OwnerRead): a node that no longer owns the
// bucket, or an owner its peers are ahead of, refuses, and the read
// follows the owner the way a write does.
func (r *Router) GetManifestAtOwner(ctx context.Context, bucket, key string) (*api.ManifestReply, error) {
	args := api.ManifestArgs{Bucket: bucket, Key: key, OwnerRead: api.OwnerRead{AsOwner: true}}
	return atOwner(ctx, r, bucket, false, func(ctx context.Context, e *endpoint) (*api.ManifestReply, error) {
		return e.c.getManifest(ctx, args)
	})
}

// ListManifestsAtOwner lists at the bucket's owner (GetManifestAtOwner).
func (r *Router) ListManifestsAtOwner(ctx context.Context, args api.ListManifestsArgs) (*api.ListManifestsReply, error) {
	args.AsOwner = true
	return atOwner(ctx, r, args.Bucket, false, func(ctx context.Context, e *endpoint) (*api.ListManifestsReply, error) {
		return e.c.ListManifests(ctx, args)
	})
}
