package state

import (
	"encoding/binary"

	"github.com/ava-labs/avalanchego/ids"
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
)

func livenessKey(nodeID ids.NodeID) []byte { return append([]byte{tagLiveness}, nodeID[:]...) }

func counterKey(rangeKey string) []byte {
	return append([]byte{tagCounter}, rangeKey...)
}

func manifestKey(bucket, key string) []byte {
	b := make([]byte, 0, 3+len(bucket)+len(key))
	b = append(b, tagManifest)
	b = binary.BigEndian.AppendUint16(b, uint16(len(bucket)))
	b = append(b, bucket...)
	return append(b, key...)
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
