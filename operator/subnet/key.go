package subnet

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
)

// ErrKeyFile: the key file is missing, unreadable or holds no key.
var ErrKeyFile = errors.New("subnet: bad key file")

// ReadKey reads a secp256k1 private key from a file holding it in one of
// the forms avalanchego's tools print: PrivateKey-<cb58> (as tmpnet and
// the wallet examples write it) or 64 hex digits (optionally 0x-prefixed).
// Surrounding whitespace is ignored.
func ReadKey(path string) (*secp256k1.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	k, err := ParseKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKeyFile, path, err)
	}
	return k, nil
}

// ParseKey parses a key in one of ReadKey's forms. Errors never quote the
// text: it is a secret.
func ParseKey(s string) (*secp256k1.PrivateKey, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	if strings.HasPrefix(s, secp256k1.PrivateKeyPrefix) {
		k := new(secp256k1.PrivateKey)
		if err := k.UnmarshalText([]byte(s)); err != nil {
			return nil, errors.New("not a valid PrivateKey-<cb58> key")
		}
		return k, nil
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil || len(raw) != secp256k1.PrivateKeyLen {
		return nil, fmt.Errorf("neither PrivateKey-<cb58> nor %d hex digits", 2*secp256k1.PrivateKeyLen)
	}
	return secp256k1.ToPrivateKey(raw)
}

// WriteKey writes key to path in the PrivateKey-<cb58> form, readable by
// its owner only; it never overwrites an existing file.
func WriteKey(path string, key *secp256k1.PrivateKey) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	if _, err := f.WriteString(key.String() + "\n"); err != nil {
		_ = f.Close()
		return fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	return f.Close()
}
