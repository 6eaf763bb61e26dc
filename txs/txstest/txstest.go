// Package txstest builds real signing keys and signed transactions for tests
// of every package that handles S-Chain transactions.
package txstest

import (
	"crypto/sha256"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"

	"github.com/s-chain/schain/txs"
)

// Key is a validator identity with a real local BLS key.
type Key struct {
	NodeID ids.NodeID
	Secret *localsigner.LocalSigner
}

// NewKeys makes n validators with fresh BLS keys and NodeIDs derived from
// label, so test output stays readable and stable across runs.
func NewKeys(label string, n int) ([]*Key, error) {
	keys := make([]*Key, n)
	for i := range keys {
		sk, err := localsigner.New()
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s-%d", label, i)))
		var id ids.NodeID
		copy(id[:], sum[:])
		keys[i] = &Key{NodeID: id, Secret: sk}
	}
	return keys, nil
}

// PublicKey is the key the P-chain would register for this validator.
func (k *Key) PublicKey() *bls.PublicKey { return k.Secret.PublicKey() }

// Signer signs warp messages of one network and chain, like a node's
// WarpSigner.
func (k *Key) Signer(networkID uint32, chainID ids.ID) warp.Signer {
	return warp.NewSigner(k.Secret, networkID, chainID)
}

// Sign signs u with k under the default limits.
func (k *Key) Sign(u txs.Unsigned) (*txs.Tx, error) {
	h := u.Head()
	return txs.Sign(u, txs.DefaultLimits(), k.Signer(h.NetworkID, h.ChainID))
}
