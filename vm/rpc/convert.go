package rpc

import (
	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
)

// The API carries identifiers as bytes and its own shapes (package api
// imports only the standard library, for the SeaweedFS patch); these
// convert between them and the chain's types at the API's edge.

func chunksOf(in []api.Chunk) []txs.Chunk {
	if in == nil {
		return nil
	}
	out := make([]txs.Chunk, len(in))
	for i, c := range in {
		out[i] = txs.Chunk{Range: c.Range, ID: c.ID, Size: c.Size, Hash: ids.ID(c.Hash)}
	}
	return out
}

func apiChunks(in []txs.Chunk) []api.Chunk {
	if in == nil {
		return nil
	}
	out := make([]api.Chunk, len(in))
	for i, c := range in {
		out[i] = api.Chunk{Range: c.Range, ID: c.ID, Size: c.Size, Hash: api.ID(c.Hash)}
	}
	return out
}

func apiManifest(m txs.Manifest) api.Manifest {
	return api.Manifest{Bucket: m.Bucket, Key: m.Key, Size: m.Size, ContentHash: api.ID(m.ContentHash), Chunks: apiChunks(m.Chunks), Deleted: m.Deleted}
}

// conditionOf reads a write's condition; an unknown kind is
// txs.ErrBadCondition, as the chain's own JSON would answer.
func conditionOf(c *api.Condition) (txs.Condition, error) {
	var out txs.Condition
	if c == nil {
		return out, nil
	}
	if err := out.Kind.UnmarshalText([]byte(c.Kind)); err != nil {
		return out, err
	}
	out.Version = c.Version
	if c.ContentHash != nil {
		out.ContentHash = ids.ID(*c.ContentHash)
	}
	return out, nil
}

func chunkRefsOf(in []api.ChunkRef) []txs.ChunkRef {
	out := make([]txs.ChunkRef, len(in))
	for i, c := range in {
		out[i] = txs.ChunkRef(c)
	}
	return out
}
