package writer

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// signer signs this node's transactions: it owns the node's key, its
// identity on the chain and the nonce counter.
type signer struct {
	networkID uint32
	chainID   ids.ID
	nodeID    ids.NodeID
	key       warp.Signer
	limits    txs.Limits
	sigs      *execute.SignatureCache

	mu    sync.Mutex // guards nonce
	nonce uint64
}

func newSigner(cfg Config, sigs *execute.SignatureCache) (*signer, error) {
	s := &signer{networkID: cfg.NetworkID, chainID: cfg.ChainID, nodeID: cfg.NodeID, key: cfg.Signer, limits: cfg.Genesis.TxLimits, sigs: sigs}
	// Nonces only need to differ between this node's own transactions of one
	// round, including across restarts: start at a random point, so that
	// neither a clock stepped back nor a fixed clock repeats one.
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("drawing a nonce: %w", err)
	}
	s.nonce = binary.BigEndian.Uint64(b[:]) >> 1 // half the space above it is left for increments
	return s, nil
}

// header starts a transaction of this node with a fresh nonce.
func (s *signer) header(pChainHeight uint64, fingerprint ids.ID, round uint64) txs.Header {
	s.mu.Lock()
	s.nonce++
	nonce := s.nonce
	s.mu.Unlock()
	return txs.Header{
		NetworkID: s.networkID, ChainID: s.chainID, PChainHeight: pChainHeight,
		Fingerprint: fingerprint, Owner: s.nodeID, Nonce: nonce, Round: round,
	}
}

// sign signs u with this node's key. The signature is this node's own, so
// it enters the verified-signature cache at once: admission and this node's
// Verify of the block carrying it skip the BLS check (about a third of an
// allocate request's CPU). Every other validator still verifies it.
func (s *signer) sign(u txs.Unsigned) (*txs.Tx, error) {
	tx, err := txs.Sign(u, s.limits, s.key)
	if err != nil {
		return nil, err
	}
	s.sigs.Add(tx.ID())
	return tx, nil
}
