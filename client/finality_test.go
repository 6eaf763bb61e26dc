package client_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/block"
)

var proofChain = ids.ID{'p', 'r', 'o', 'o', 'f'}

// provenChain is a chain of blocks 1..n, one allocation in each, and
// three validators that sign certificates over any of them.
type provenChain struct {
	t      *testing.T
	keys   []*txstest.Key
	set    certificate.ValidatorSet
	blocks []*block.Block // by height - 1
}

func newProvenChain(t *testing.T, n int) *provenChain {
	keys, err := txstest.NewKeys(t.Name(), 3)
	require.NoError(t, err)
	vals := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, k := range keys {
		vals[k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, PublicKey: k.PublicKey(), Weight: 10}
	}
	c := &provenChain{t: t, keys: keys, set: certificate.NewValidatorSet(ids.ID{'s'}, 3, vals)}
	c.set.ChainCreatedAt = 2
	parent := ids.ID{'g'}
	for h := uint64(1); h <= uint64(n); h++ {
		tx, err := keys[0].Sign(&txs.AllocateTx{
			Header:  txs.Header{NetworkID: 5, ChainID: proofChain, PChainHeight: 3, Owner: keys[0].NodeID, Nonce: h},
			Entries: []txs.AllocateEntry{{Range: fmt.Sprintf("r%d", h), Count: 1}},
		})
		require.NoError(t, err)
		b, err := block.New(parent, h, 1000*h, true, 3, ids.ID{byte(h)}, []*txs.Tx{tx}, block.DefaultLimits())
		require.NoError(t, err)
		c.blocks = append(c.blocks, b)
		parent = b.ID()
	}
	return c
}

// certify is the certificate of all three validators over block h.
func (c *provenChain) certify(h uint64) *certificate.Certificate {
	b := c.blocks[h-1]
	st := certificate.Statement{NetworkID: 5, ChainID: proofChain, Height: h, BlockID: b.ID(), StateRoot: b.StateRoot, PChainHeight: 3}
	msg, err := st.Message()
	require.NoError(c.t, err)
	canonical, err := c.set.Canonical()
	require.NoError(c.t, err)
	sigs := map[int]*bls.Signature{}
	for i, v := range canonical.Validators {
		for _, k := range c.keys {
			if k.NodeID == v.NodeIDs[0] {
				raw, err := k.Signer(5, proofChain).Sign(msg)
				require.NoError(c.t, err)
				sigs[i], err = bls.SignatureFromBytes(raw)
				require.NoError(c.t, err)
			}
		}
	}
	cert, err := certificate.Aggregate(st, sigs)
	require.NoError(c.t, err)
	return cert
}

func (c *provenChain) receipt(h, certifiedBy uint64) *api.ReceiptReply {
	cert := c.certify(certifiedBy)
	return &api.ReceiptReply{TxID: c.blocks[h-1].Txs[0].ID(), Status: api.StatusAccepted, Height: h, Final: true, CertifiedBy: certifiedBy, Certificate: cert}
}

// source serves the chain's blocks, with swap's replacements.
func (c *provenChain) source(swap map[uint64]*block.Block) client.BlockSource {
	return func(_ context.Context, h uint64) (*api.BlockReply, error) {
		b := c.blocks[h-1]
		if s, ok := swap[h]; ok {
			b = s
		}
		return &api.BlockReply{Height: h, ID: b.ID(), Bytes: "0x" + hex.EncodeToString(b.Bytes())}, nil
	}
}

func TestProveFinal(t *testing.T) {
	ctx := context.Background()
	c := newProvenChain(t, 6)

	p, err := client.ProveFinal(ctx, c.source(nil), c.receipt(4, 4), 5, proofChain, c.set)
	require.NoError(t, err)
	require.Zero(t, p.Walked)
	require.Equal(t, uint64(30), p.SignedWeight)

	p, err = client.ProveFinal(ctx, c.source(nil), c.receipt(2, 6), 5, proofChain, c.set)
	require.NoError(t, err, "a certificate above covers the blocks below")
	require.Equal(t, 4, p.Walked)

	// A node substituting another block in between breaks the links.
	other := newProvenChain(t, 6)
	_, err = client.ProveFinal(ctx, c.source(map[uint64]*block.Block{4: other.blocks[3]}), c.receipt(2, 6), 5, proofChain, c.set)
	require.ErrorIs(t, err, client.ErrBrokenProof)

	// A receipt naming a transaction its block does not carry.
	rc := c.receipt(3, 5)
	rc.TxID = c.blocks[1].Txs[0].ID()
	_, err = client.ProveFinal(ctx, c.source(nil), rc, 5, proofChain, c.set)
	require.ErrorIs(t, err, client.ErrBrokenProof)

	// A certificate below the receipt covers nothing.
	rc = c.receipt(5, 3)
	_, err = client.ProveFinal(ctx, c.source(nil), rc, 5, proofChain, c.set)
	require.ErrorIs(t, err, client.ErrBrokenProof)

	// Another validator set, another chain, no certificate.
	_, err = client.ProveFinal(ctx, c.source(nil), c.receipt(4, 4), 5, proofChain, other.set)
	require.ErrorIs(t, err, certificate.ErrBadSignature)
	_, err = client.ProveFinal(ctx, c.source(nil), c.receipt(4, 4), 5, ids.ID{'x'}, c.set)
	require.ErrorIs(t, err, certificate.ErrWrongChain)
	_, err = client.ProveFinal(ctx, c.source(nil), &api.ReceiptReply{Status: api.StatusAccepted, Height: 4}, 5, proofChain, c.set)
	require.ErrorIs(t, err, client.ErrNotFinal)
}

// TestFirstPChainHeight: the P-chain height of the chain's first block
// with a context, where its creation is looked for first.
func TestFirstPChainHeight(t *testing.T) {
	c := newProvenChain(t, 3)
	h, ok := client.FirstPChainHeight(context.Background(), c.source(nil))
	require.True(t, ok)
	require.Equal(t, uint64(3), h)
	_, ok = client.FirstPChainHeight(context.Background(), func(context.Context, uint64) (*api.BlockReply, error) {
		return nil, client.ErrNotFound
	})
	require.False(t, ok)
}
