package pinning

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"
)

var (
	// ErrEmptySet is returned when no member could own a range: the set is
	// empty or every member has weight zero. Callers must treat it as "not
	// ready" and never fall back to an arbitrary node.
	ErrEmptySet = errcode.New(errcode.NotReady, "empty_set", "pinning: no member with positive weight")
	// ErrDuplicateMember is returned when a NodeID appears twice: a set with
	// duplicates has no single meaning, so it is refused rather than merged.
	ErrDuplicateMember = errcode.New(errcode.Rejected, "duplicate_member", "pinning: duplicate member")
	// ErrWeightOverflow is returned when the total weight exceeds 2^64-1.
	ErrWeightOverflow = errcode.New(errcode.Rejected, "weight_overflow", "pinning: total weight overflows uint64")
)

// Hash-input domains. Changing either changes every owner and fingerprint,
// so they carry a version.
const (
	scoreDomain       = "schain/pinning/hrw/v1"
	fingerprintDomain = "schain/pinning/epoch/v1"
)

// Member is one validator as pinning sees it: identity and stake weight only,
// so the rule carries no dependency on how validator sets are fetched.
type Member struct {
	NodeID ids.NodeID `json:"nodeID"`
	Weight uint64     `json:"weight"`
}

// Owner returns the member that owns rangeKey among members. It validates the
// set on every call; for many lookups under one set build a Set instead.
func Owner(rangeKey string, members []Member) (ids.NodeID, error) {
	if err := validate(members); err != nil {
		return ids.EmptyNodeID, err
	}
	return owner(rangeKey, members)
}

// IsOwner reports whether self owns rangeKey among members: the whole
// admission rule of a pinned writer.
func IsOwner(rangeKey string, self ids.NodeID, members []Member) (bool, error) {
	o, err := Owner(rangeKey, members)
	if err != nil {
		return false, err
	}
	return o == self, nil
}

// SetFingerprint digests (height, members) so two nodes can tell in one
// comparison whether they pinned against the same set. It is independent of
// the order of members and rejects duplicates.
func SetFingerprint(height uint64, members []Member) (ids.ID, error) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, compareMembers)
	if err := validateSorted(sorted); err != nil {
		return ids.Empty, err
	}
	return fingerprint(height, sorted), nil
}

func fingerprint(height uint64, sorted []Member) ids.ID {
	h := sha256.New()
	var buf [8]byte
	writeString(h, fingerprintDomain)
	binary.BigEndian.PutUint64(buf[:], height)
	h.Write(buf[:])
	binary.BigEndian.PutUint64(buf[:], uint64(len(sorted)))
	h.Write(buf[:])
	for _, m := range sorted {
		h.Write(m.NodeID[:])
		binary.BigEndian.PutUint64(buf[:], m.Weight)
		h.Write(buf[:])
	}
	var id ids.ID
	h.Sum(id[:0])
	return id
}

// owner assumes members were validated.
func owner(rangeKey string, members []Member) (ids.NodeID, error) {
	var (
		best     ids.NodeID
		bestW    uint64
		bestD    uint64
		haveBest bool
	)
	buf := scorePrefix(rangeKey)
	for _, m := range members {
		if m.Weight == 0 {
			continue
		}
		d := distance(scoreHash(buf, m.NodeID))
		if !haveBest || beats(m.Weight, d, m.NodeID, bestW, bestD, best) {
			best, bestW, bestD, haveBest = m.NodeID, m.Weight, d, true
		}
	}
	if !haveBest {
		return ids.EmptyNodeID, ErrEmptySet
	}
	return best, nil
}

// beats reports whether score wa/da is above wb/db, comparing wa*db with
// wb*da in 128 bits so no division or rounding is involved. Equal scores go
// to the smaller NodeID.
func beats(wa, da uint64, a ids.NodeID, wb, db uint64, b ids.NodeID) bool {
	ahi, alo := bits.Mul64(wa, db)
	bhi, blo := bits.Mul64(wb, da)
	switch {
	case ahi != bhi:
		return ahi > bhi
	case alo != blo:
		return alo > blo
	default:
		return a.Compare(b) < 0
	}
}

// scorePrefix encodes the hash input of one lookup: the domain, the range
// length-prefixed (so no (range, node) pair can collide with another), then
// room for the fixed-size NodeID that scoreHash fills in per member.
func scorePrefix(rangeKey string) []byte {
	b := make([]byte, 0, len(scoreDomain)+4+len(rangeKey)+ids.NodeIDLen)
	b = append(b, scoreDomain...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(rangeKey)))
	b = append(b, rangeKey...)
	return b[:len(b)+ids.NodeIDLen]
}

// scoreHash hashes buf with its last NodeIDLen bytes set to nodeID.
func scoreHash(buf []byte, nodeID ids.NodeID) uint64 {
	copy(buf[len(buf)-ids.NodeIDLen:], nodeID[:])
	sum := sha256.Sum256(buf)
	return binary.BigEndian.Uint64(sum[:8])
}

func writeString(h interface{ Write([]byte) (int, error) }, s string) {
	var buf [4]byte
	binary.BigEndian.PutUint32(buf[:], uint32(len(s)))
	h.Write(buf[:])
	h.Write([]byte(s))
}

func compareMembers(a, b Member) int { return a.NodeID.Compare(b.NodeID) }

func validate(members []Member) error {
	seen := make(map[ids.NodeID]struct{}, len(members))
	var total uint64
	for _, m := range members {
		if _, dup := seen[m.NodeID]; dup {
			return fmt.Errorf("%w: %s", ErrDuplicateMember, m.NodeID)
		}
		seen[m.NodeID] = struct{}{}
		var carry uint64
		total, carry = bits.Add64(total, m.Weight, 0)
		if carry != 0 {
			return ErrWeightOverflow
		}
	}
	if total == 0 {
		return ErrEmptySet
	}
	return nil
}

func validateSorted(sorted []Member) error {
	for i := 1; i < len(sorted); i++ {
		if sorted[i].NodeID == sorted[i-1].NodeID {
			return fmt.Errorf("%w: %s", ErrDuplicateMember, sorted[i].NodeID)
		}
	}
	return validate(sorted)
}
