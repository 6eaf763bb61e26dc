package seaweed

import (
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

// maxCollectionLen keeps collection names within S3 bucket limits, so a
// collection name is always one the SeaweedFS S3 gateway could have created.
const maxCollectionLen = 63

var errEmptyRange = fmt.Errorf("%w: empty range key", legacy.ErrRejected)

// Collection maps a range key to the SeaweedFS collection its assignments
// are made in.
//
// A range is a bucket or a band "bucket/..." of one, and the SeaweedFS S3
// gateway stores every object of a bucket in the collection named after the
// bucket; so the collection is the part before the first '/'. When that part
// is already a safe name (1-63 of [a-z0-9.-], starting and ending with a
// letter or digit, no "..") it is used unchanged, as the S3 gateway would.
// Otherwise it is sanitised deterministically: lowercased, any byte outside
// [a-z0-9-] replaced by '-', cut to fit, and suffixed with "-" and the 8 hex digits of
// the CRC-32 (IEEE) of the original bucket, so that distinct unsafe names
// stay distinct with high probability. A collision (two buckets, one
// collection) is harmless here: collections only choose volumes, and file
// keys come from one global sequencer whatever the collection.
func Collection(rangeKey string) (string, error) {
	bucket, _, _ := strings.Cut(rangeKey, "/")
	if bucket == "" {
		return "", errEmptyRange
	}
	if safeCollection(bucket) {
		return bucket, nil
	}
	const suffixLen = 1 + 8
	var b strings.Builder
	for i := 0; i < len(bucket) && b.Len() < maxCollectionLen-suffixLen; i++ {
		c := bucket[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case isSafeByte(c) && c != '.':
			b.WriteByte(c)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "r"
	}
	return fmt.Sprintf("%s-%08x", name, crc32.ChecksumIEEE([]byte(bucket))), nil
}

func isSafeByte(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'
}

func safeCollection(s string) bool {
	if len(s) > maxCollectionLen || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isSafeByte(s[i]) {
			return false
		}
	}
	first, last := s[0], s[len(s)-1]
	return first != '-' && first != '.' && last != '-' && last != '.'
}
