package seaweed

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Named fid parse errors. ParseFileID wraps exactly one of them.
var (
	// ErrFidFormat: the fid is not "<volume>,<key hex><cookie hex>".
	ErrFidFormat = errors.New("fid: want <volume>,<hex key><8 hex cookie>")
	// ErrFidVolume: the volume id is not a canonical decimal in [1, 2^32).
	ErrFidVolume = errors.New("fid: bad volume id")
	// ErrFidKey: the file key is not 1-16 lowercase hex digits, or is 0.
	ErrFidKey = errors.New("fid: bad file key")
	// ErrFidCookie: the cookie is not exactly 8 lowercase hex digits.
	ErrFidCookie = errors.New("fid: bad cookie")
)

const (
	cookieHexLen = 8
	maxKeyHexLen = 16
	maxFidLen    = 10 + 1 + maxKeyHexLen + cookieHexLen // uint32 decimal, comma, key, cookie
)

// FileID is a parsed SeaweedFS file id: the volume holding the file, the
// file key (needle id) issued by the master's sequencer, and the random
// cookie that guards reads.
type FileID struct {
	Volume uint32
	Key    uint64
	Cookie uint32
}

// ParseFileID parses the fid of a /dir/assign answer strictly:
// "<volume>,<key><cookie>" where volume is decimal without sign or leading
// zeros, key is 1 to 16 lowercase hex digits and cookie exactly 8. The master
// formats key and cookie as one big-endian byte string with leading zero bytes
// dropped, so the key may carry one leading zero digit; volume 0 and key 0 are
// never issued and are rejected. Suffixes such as the "_N" that clients append
// for the N-th key of a multi-key assignment are not part of an assign answer
// and are rejected too.
func ParseFileID(fid string) (FileID, error) {
	if len(fid) > maxFidLen {
		return FileID{}, fmt.Errorf("%w: %d bytes", ErrFidFormat, len(fid))
	}
	vol, keyCookie, ok := strings.Cut(fid, ",")
	if !ok {
		return FileID{}, fmt.Errorf("%w: no comma in %q", ErrFidFormat, fid)
	}
	volume, err := parseVolume(vol)
	if err != nil {
		return FileID{}, fmt.Errorf("%w: %q", err, fid)
	}
	if len(keyCookie) <= cookieHexLen {
		return FileID{}, fmt.Errorf("%w: key and cookie %q too short", ErrFidFormat, keyCookie)
	}
	split := len(keyCookie) - cookieHexLen
	keyHex, cookieHex := keyCookie[:split], keyCookie[split:]
	if len(keyHex) > maxKeyHexLen || !isLowerHex(keyHex) {
		return FileID{}, fmt.Errorf("%w: %q", ErrFidKey, keyHex)
	}
	if !isLowerHex(cookieHex) {
		return FileID{}, fmt.Errorf("%w: %q", ErrFidCookie, cookieHex)
	}
	key, err := strconv.ParseUint(keyHex, 16, 64)
	if err != nil || key == 0 {
		return FileID{}, fmt.Errorf("%w: %q", ErrFidKey, keyHex)
	}
	cookie, err := strconv.ParseUint(cookieHex, 16, 32)
	if err != nil {
		return FileID{}, fmt.Errorf("%w: %q", ErrFidCookie, cookieHex)
	}
	return FileID{Volume: volume, Key: key, Cookie: uint32(cookie)}, nil
}

func parseVolume(s string) (uint32, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, ErrFidVolume
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, ErrFidVolume
		}
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v == 0 {
		return 0, ErrFidVolume
	}
	return uint32(v), nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// String formats the fid the way the master does: key and cookie as one
// big-endian byte string in hex, leading zero bytes dropped.
func (f FileID) String() string {
	var b [12]byte
	for i := range 8 {
		b[i] = byte(f.Key >> (56 - 8*i))
	}
	for i := range 4 {
		b[8+i] = byte(f.Cookie >> (24 - 8*i))
	}
	start := 0
	for start < 8 && b[start] == 0 {
		start++
	}
	const digits = "0123456789abcdef"
	out := make([]byte, 0, maxFidLen)
	out = strconv.AppendUint(out, uint64(f.Volume), 10)
	out = append(out, ',')
	for _, c := range b[start:] {
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(out)
}
