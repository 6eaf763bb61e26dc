package state

import (
	"encoding/binary"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
)

const (
	tagCounter      byte = 'c'
	tagManifest     byte = 'm'
	tagReceipt      byte = 'x'
	tagReplay       byte = 'r'
	tagReplayPruned byte = 'e'
	tagBlock        byte = 'b'
	tagHeight       byte = 'h'
	tagAccepted     byte = 'a'
	tagLiveness     byte = 'l'
	tagMembership   byte = 'p'
	tagLease        byte = 'L'
	tagFence        byte = 'F'
	tagObject       byte = 'v'
	tagChunk        byte = 'k'
	tagReleased     byte = 'g'
	tagRemoval      byte = 'R'
)

func livenessKey(nodeID ids.NodeID) []byte { return append([]byte{tagLiveness}, nodeID[:]...) }

func removalKey(nodeID ids.NodeID) []byte { return append([]byte{tagRemoval}, nodeID[:]...) }

func counterKey(rangeKey string) []byte {
	return append([]byte{tagCounter}, rangeKey...)
}

func manifestKey(bucket, key string) []byte { return bucketKey(tagManifest, bucket, key) }

func objectKey(bucket, key string) []byte { return bucketKey(tagObject, bucket, key) }

// bucketKey is tag | u16 length | bucket | rest: one bucket's keys are
// contiguous and in the order of rest.
func bucketKey(tag byte, bucket, rest string) []byte {
	b := make([]byte, 0, 3+len(bucket)+len(rest))
	b = append(b, tag)
	b = binary.BigEndian.AppendUint16(b, uint16(len(bucket)))
	b = append(b, bucket...)
	return append(b, rest...)
}

func chunkKey(c txs.ChunkRef) []byte {
	b := make([]byte, 0, 3+len(c.Range)+8)
	b = append(b, tagChunk)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Range)))
	b = append(b, c.Range...)
	return binary.BigEndian.AppendUint64(b, c.ID)
}

// releasedKey orders a bucket's released list by the height that released
// each chunk, then by chunk.
func releasedKey(bucket string, height uint64, c txs.ChunkRef) []byte {
	b := bucketKey(tagReleased, bucket, "")
	b = binary.BigEndian.AppendUint64(b, height)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Range)))
	b = append(b, c.Range...)
	return binary.BigEndian.AppendUint64(b, c.ID)
}

// parseReleasedKey reads the height and chunk of a released-list key whose
// bucket part is prefixLen bytes long.
func parseReleasedKey(k []byte, prefixLen int) (uint64, txs.ChunkRef, bool) {
	rest := k[prefixLen:]
	if len(rest) < 8+2+8 {
		return 0, txs.ChunkRef{}, false
	}
	height := binary.BigEndian.Uint64(rest)
	n := int(binary.BigEndian.Uint16(rest[8:]))
	if len(rest) != 8+2+n+8 {
		return 0, txs.ChunkRef{}, false
	}
	return height, txs.ChunkRef{Range: string(rest[10 : 10+n]), ID: binary.BigEndian.Uint64(rest[10+n:])}, true
}

func leaseKey(rangeKey string) []byte { return append([]byte{tagLease}, rangeKey...) }

func fenceKey(rangeKey string) []byte { return append([]byte{tagFence}, rangeKey...) }

func receiptKey(txID ids.ID) []byte { return append([]byte{tagReceipt}, txID[:]...) }

// replayKey orders the replay index by liveness round, so pruning deletes
// a prefix.
func replayKey(round uint64, signingHash ids.ID) []byte {
	b := make([]byte, 0, 1+8+32)
	b = append(b, tagReplay)
	b = binary.BigEndian.AppendUint64(b, round)
	return append(b, signingHash[:]...)
}

// replayRound is the liveness round of a replay key.
func replayRound(k []byte) uint64 { return binary.BigEndian.Uint64(k[1:9]) }

func blockKey(id ids.ID) []byte { return append([]byte{tagBlock}, id[:]...) }

func heightKey(height uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{tagHeight}, height)
}

var (
	replayPrunedKey = []byte{tagReplayPruned}
	acceptedKey     = []byte{tagAccepted}
	membershipKey   = []byte{tagMembership}
)

// NewKeyPrefixes are the prefixes whose reads mostly ask for keys that do
// not exist yet: a new object's record and its legacy manifest, a chunk's
// binding, read by every execution of the block that writes them. A cache
// that knows every key under them (dbcache.Track) answers those reads
// without the database.
func NewKeyPrefixes() [][]byte { return [][]byte{{tagObject}, {tagManifest}, {tagChunk}} }
