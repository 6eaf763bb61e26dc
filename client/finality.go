package client

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/block"
)

// MaxProofBlocks bounds the blocks ProveFinal walks from a certified block
// down to a receipt's: a certificate that far above is not worth the walk
// (ask for the receipt again: a closer certificate comes with it).
const MaxProofBlocks = 4096

var (
	// ErrNotFinal: the receipt carries no certificate (not accepted, or no
	// certificate covers its block yet).
	ErrNotFinal = errcode.New(errcode.NotReady, "not_final", "client: the receipt is not final")
	// ErrBrokenProof: the blocks between the certificate and the receipt do
	// not link the certified block to one carrying the transaction.
	ErrBrokenProof = errcode.New(errcode.Rejected, "broken_proof", "client: the blocks do not prove the certificate covers the receipt")
)

// Proof is what ProveFinal established.
type Proof struct {
	Certificate *certificate.Certificate `json:"certificate"`
	certificate.Result
	// Walked is how many blocks linked the certified block down to the
	// receipt's (0: the certificate is over the receipt's own block).
	Walked int `json:"walked"`
}

// BlockSource serves accepted blocks by height (Router.GetBlock). ProveFinal
// trusts none of them: it checks every block against the hash its child
// (or the certificate) names.
type BlockSource func(ctx context.Context, height uint64) (*api.BlockReply, error)

// ProveFinal checks offline that rc is final on chainID of networkID: its
// certificate verifies against vs (the P-chain set at the certificate's
// P-chain height, taken from the P-chain, not from the node that served
// the receipt), and the block the certificate names descends, through the
// parent links of the blocks below it, from a block at rc's height that
// carries rc's transaction.
//
// It proves the transaction is in a final block. The receipt's entries
// (the ids reserved) are that block's deterministic execution, which the
// certified state root commits to; checking them needs the state, which a
// client does not have.
func ProveFinal(ctx context.Context, blocks BlockSource, rc *api.ReceiptReply, networkID uint32, chainID ids.ID, vs certificate.ValidatorSet) (Proof, error) {
	if rc.Status != api.StatusAccepted || rc.Certificate == nil {
		return Proof{}, fmt.Errorf("%w: transaction %s is %s", ErrNotFinal, rc.TxID, rc.Status)
	}
	p, l, err := ProveBlock(ctx, blocks, rc.Certificate, rc.Height, networkID, chainID, vs)
	if err != nil {
		return p, err
	}
	if !slices.Contains(l.TxIDs, rc.TxID) {
		return p, fmt.Errorf("%w: block %d does not carry transaction %s", ErrBrokenProof, rc.Height, rc.TxID)
	}
	return p, nil
}

// ProveBlock checks offline that cert verifies against vs and covers
// height: the certified block descends from the block at height, whose
// links it returns.
func ProveBlock(ctx context.Context, blocks BlockSource, cert *certificate.Certificate, height uint64, networkID uint32, chainID ids.ID, vs certificate.ValidatorSet) (Proof, block.Links, error) {
	res, err := certificate.Verify(cert, networkID, chainID, vs)
	if err != nil {
		return Proof{}, block.Links{}, err
	}
	p := Proof{Certificate: cert, Result: res}
	if cert.Height < height {
		return p, block.Links{}, fmt.Errorf("%w: certificate at height %d is below block %d", ErrBrokenProof, cert.Height, height)
	}
	if cert.Height-height > MaxProofBlocks {
		return p, block.Links{}, fmt.Errorf("%w: certificate %d blocks above block %d (at most %d walked); ask again for a closer one",
			ErrBrokenProof, cert.Height-height, height, MaxProofBlocks)
	}
	want := cert.BlockID
	for h := cert.Height; ; h-- {
		l, err := fetchLinks(ctx, blocks, h)
		if err != nil {
			return p, block.Links{}, err
		}
		if l.ID != want || l.Height != h {
			return p, block.Links{}, fmt.Errorf("%w: block at height %d is %s, expected %s", ErrBrokenProof, h, l.ID, want)
		}
		if h == cert.Height && l.StateRoot != cert.StateRoot {
			return p, block.Links{}, fmt.Errorf("%w: certified block's state root %s differs from the certificate's %s", ErrBrokenProof, l.StateRoot, cert.StateRoot)
		}
		if h == height {
			return p, l, nil
		}
		want, p.Walked = l.Parent, p.Walked+1
	}
}

// openingBlocks bounds the blocks without a P-chain context a chain starts
// with (the builder makes at most four before the first membership).
const openingBlocks = 8

// FirstPChainHeight is the P-chain height of the chain's first block with
// a P-chain context (false: none among its first blocks), as blocks serves
// them: where the chain's creation on the P-chain is looked for first
// (subnet.ChainCreatedAt). Nothing is trusted: a wrong answer costs that
// search more reading, never a wrong creation height.
func FirstPChainHeight(ctx context.Context, blocks BlockSource) (uint64, bool) {
	for h := uint64(1); h <= openingBlocks; h++ {
		l, err := fetchLinks(ctx, blocks, h)
		if err != nil {
			return 0, false
		}
		if l.HasPChainHeight {
			return l.PChainHeight, true
		}
	}
	return 0, false
}

func fetchLinks(ctx context.Context, blocks BlockSource, h uint64) (block.Links, error) {
	br, err := blocks(ctx, h)
	if err != nil {
		return block.Links{}, fmt.Errorf("block at height %d: %w", h, err)
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(br.Bytes, "0x"))
	if err != nil {
		return block.Links{}, fmt.Errorf("%w: block at height %d: %w", ErrMalformedResponse, h, err)
	}
	l, err := block.ReadLinks(raw)
	if err != nil {
		return block.Links{}, fmt.Errorf("%w: block at height %d: %w", ErrBrokenProof, h, err)
	}
	return l, nil
}
