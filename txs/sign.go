package txs

import (
	"crypto/sha256"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
)

// signingDomain separates S-Chain signing hashes from every other message a
// validator's BLS key signs.
const signingDomain = "schain/tx/sign/v1"

func signingHash(unsigned []byte) ids.ID {
	h := sha256.New()
	h.Write([]byte(signingDomain))
	h.Write(unsigned)
	var id ids.ID
	h.Sum(id[:0])
	return id
}

// Message is what the owner's validator key signs: a warp unsigned message
// from this chain whose payload is the signing hash. Wrapping it in warp
// binds the signature to the network and chain, and lets a node sign with
// the WarpSigner it already has, without exporting its key.
func Message(h *Header, signingHash ids.ID) (*warp.UnsignedMessage, error) {
	return warp.NewUnsignedMessage(h.NetworkID, h.ChainID, signingHash[:])
}

// Sign encodes u, signs it with signer and returns the finished transaction.
// u is checked against l first, so a node never signs what others reject.
func Sign(u Unsigned, l Limits, signer warp.Signer) (*Tx, error) {
	if err := Validate(u, l); err != nil {
		return nil, err
	}
	unsigned := encodeUnsigned(u)
	hash := signingHash(unsigned)
	msg, err := Message(u.Head(), hash)
	if err != nil {
		return nil, fmt.Errorf("building the signing message: %w", err)
	}
	sig, err := signer.Sign(msg)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	if len(sig) != sigLen {
		return nil, fmt.Errorf("%w: signer returned %d bytes", ErrBadSignature, len(sig))
	}
	all := append(unsigned[:len(unsigned):len(unsigned)], sig...)
	if len(all) > l.MaxTxBytes {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(all), l.MaxTxBytes)
	}
	tx := &Tx{Unsigned: u}
	copy(tx.Signature[:], sig)
	tx.initialize(all[:len(unsigned):len(unsigned)], all)
	return tx, nil
}

// Validate runs the stateless checks Parse runs, for a transaction built in
// memory.
func Validate(u Unsigned, l Limits) error {
	n := u.entries()
	if err := verifyCount(u, n); err != nil {
		return err
	}
	if n > l.MaxEntries {
		return fmt.Errorf("%w: %d > %d", ErrTooManyEntries, n, l.MaxEntries)
	}
	return u.verifyEntries(l)
}

// CheckSignatureShape checks that the signature is a point of the
// signature group, without the pairing VerifySignature costs: admission
// refuses malformed junk before looking up anything.
func (tx *Tx) CheckSignatureShape() error {
	if _, err := bls.SignatureFromBytes(tx.Signature[:]); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	return nil
}

// VerifySignature checks the signature against the owner's registered BLS
// key. It is a pure function of its inputs, so callers may cache a success
// by transaction ID.
func (tx *Tx) VerifySignature(pk *bls.PublicKey) error {
	if pk == nil {
		return fmt.Errorf("%w: no public key", ErrBadSignature)
	}
	sig, err := bls.SignatureFromBytes(tx.Signature[:])
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	msg, err := Message(tx.Unsigned.Head(), tx.signingHash)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	if !bls.Verify(pk, sig, msg.Bytes()) {
		return ErrBadSignature
	}
	return nil
}
