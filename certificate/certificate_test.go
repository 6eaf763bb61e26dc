package certificate_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/txs/txstest"
)

var (
	chainID  = ids.ID{'c', 'e', 'r', 't'}
	subnetID = ids.ID{'s', 'u', 'b'}
)

const networkID = 5

// fixture is a validator set at P-chain height 7 and its keys.
type fixture struct {
	t    *testing.T
	keys []*txstest.Key
	set  certificate.ValidatorSet
	// index maps a key to its place in the canonical set.
	index map[ids.NodeID]int
}

func newFixture(t *testing.T, weights ...uint64) *fixture {
	keys, err := txstest.NewKeys(t.Name(), len(weights))
	require.NoError(t, err)
	vals := map[ids.NodeID]*validators.GetValidatorOutput{}
	for i, k := range keys {
		vals[k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, PublicKey: k.PublicKey(), Weight: weights[i]}
	}
	f := &fixture{t: t, keys: keys, set: certificate.NewValidatorSet(subnetID, 7, vals), index: map[ids.NodeID]int{}}
	f.set.ChainCreatedAt = 7
	canonical, err := f.set.Canonical()
	require.NoError(t, err)
	for i, v := range canonical.Validators {
		f.index[v.NodeIDs[0]] = i
	}
	return f
}

func (f *fixture) statement() certificate.Statement {
	return certificate.Statement{
		NetworkID: networkID, ChainID: chainID, Height: 42,
		BlockID: ids.ID{'b'}, StateRoot: ids.ID{'r'}, PChainHeight: 7,
	}
}

// sign is the certificate the keys at the given positions sign for s.
func (f *fixture) sign(s certificate.Statement, who ...int) *certificate.Certificate {
	msg, err := s.Message()
	require.NoError(f.t, err)
	sigs := map[int]*bls.Signature{}
	for _, i := range who {
		b, err := f.keys[i].Signer(s.NetworkID, s.ChainID).Sign(msg)
		require.NoError(f.t, err)
		sig, err := bls.SignatureFromBytes(b)
		require.NoError(f.t, err)
		sigs[f.index[f.keys[i].NodeID]] = sig
	}
	c, err := certificate.Aggregate(s, sigs)
	require.NoError(f.t, err)
	return c
}

func TestSupermajorityIsStrictlyMoreThanTwoThirds(t *testing.T) {
	for _, c := range []struct {
		signed, total uint64
		want          bool
	}{
		{2, 3, false}, {3, 3, true}, {200, 300, false}, {201, 300, true},
		{0, 0, false}, {20, 30, false}, {21, 30, true},
		{math.MaxUint64 / 3 * 2, math.MaxUint64 / 3 * 3, false},
		{math.MaxUint64/3*2 + 1, math.MaxUint64 / 3 * 3, true},
		{math.MaxUint64, math.MaxUint64, true},
	} {
		require.Equal(t, c.want, certificate.Supermajority(c.signed, c.total), "%d of %d", c.signed, c.total)
	}
}

func TestVerifyAcceptsASupermajority(t *testing.T) {
	f := newFixture(t, 10, 10, 10, 10)
	c := f.sign(f.statement(), 0, 1, 3)
	res, err := certificate.Verify(c, networkID, chainID, f.set)
	require.NoError(t, err)
	require.Equal(t, certificate.Result{SignedWeight: 30, TotalWeight: 40, Signers: 3}, res)
}

func TestVerifyRefuses(t *testing.T) {
	f := newFixture(t, 10, 10, 10, 10)
	good := f.sign(f.statement(), 0, 1, 2)
	other := newFixture(t, 10, 10, 10, 10)
	other.t = t

	altered := func(edit func(c *certificate.Certificate)) *certificate.Certificate {
		c, err := certificate.Parse(good.Bytes())
		require.NoError(t, err)
		edit(c)
		return c
	}
	for _, c := range []struct {
		name string
		cert *certificate.Certificate
		set  certificate.ValidatorSet
		want error
	}{
		{"two thirds of the stake exactly", f.sign(f.statement(), 0, 1), f.set, certificate.ErrInsufficientStake},
		{"a single signer", f.sign(f.statement(), 2), f.set, certificate.ErrInsufficientStake},
		{"a forged signature byte", altered(func(c *certificate.Certificate) { c.Signature[10] ^= 1 }), f.set, certificate.ErrBadSignature},
		{"another block under the signatures", altered(func(c *certificate.Certificate) { c.BlockID[0] ^= 1 }), f.set, certificate.ErrBadSignature},
		{"another height under the signatures", altered(func(c *certificate.Certificate) { c.Height++ }), f.set, certificate.ErrBadSignature},
		{"another state root under the signatures", altered(func(c *certificate.Certificate) { c.StateRoot[0] ^= 1 }), f.set, certificate.ErrBadSignature},
		{"a signer claimed who did not sign", altered(func(c *certificate.Certificate) {
			c.Signers = f.sign(f.statement(), 0, 1, 3).Signers
		}), f.set, certificate.ErrBadSignature},
		{"signers beyond the set", altered(func(c *certificate.Certificate) { c.Signers = []byte{0xff, 0xff} }), f.set, certificate.ErrBadSigners},
		{"a non-canonical bitset", altered(func(c *certificate.Certificate) { c.Signers = append([]byte{0}, c.Signers...) }), f.set, certificate.ErrBadSigners},
		{"another validator set at the same height", good, other.set, certificate.ErrBadSignature},
		{"the set of another P-chain height", altered(func(c *certificate.Certificate) { c.PChainHeight = 8 }), f.set, certificate.ErrWrongSet},
		{"another chain", altered(func(c *certificate.Certificate) { c.ChainID = ids.ID{'x'} }), f.set, certificate.ErrWrongChain},
		{"another network", altered(func(c *certificate.Certificate) { c.NetworkID = 1 }), f.set, certificate.ErrWrongNetwork},
		{"an empty set", good, certificate.ValidatorSet{PChainHeight: 7, ChainCreatedAt: 7}, certificate.ErrEmptySet},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := certificate.Verify(c.cert, networkID, chainID, c.set)
			require.ErrorIs(t, err, c.want)
		})
	}
}

func TestKeylessStakeCountsAgainstACertificate(t *testing.T) {
	f := newFixture(t, 10, 10, 10)
	require.NoError(t, func() error {
		_, err := certificate.Verify(f.sign(f.statement(), 0, 1, 2), networkID, chainID, f.set)
		return err
	}())
	// A validator without a BLS key holds 20 of 50: the three keyed ones
	// (30) are no longer more than 2/3.
	f.set.Validators = append(f.set.Validators, certificate.Validator{NodeID: ids.GenerateTestNodeID(), Weight: 20})
	_, err := certificate.Verify(f.sign(f.statement(), 0, 1, 2), networkID, chainID, f.set)
	require.ErrorIs(t, err, certificate.ErrInsufficientStake)
}

func TestStatementPayloadIsNeverATransactionHash(t *testing.T) {
	f := newFixture(t, 10)
	s := f.statement()
	msg, err := s.Message()
	require.NoError(t, err)
	require.Len(t, msg.Payload, certificate.PayloadLen)
	require.NotEqual(t, 32, certificate.PayloadLen, "owners sign 32-byte transaction hashes")
	back, err := certificate.ParseMessage(msg)
	require.NoError(t, err)
	require.Equal(t, s, back)

	for _, payload := range [][]byte{
		make([]byte, 32),
		make([]byte, certificate.PayloadLen),
		append(s.Payload(), 0),
		s.Payload()[:certificate.PayloadLen-1],
	} {
		m, err := warp.NewUnsignedMessage(networkID, chainID, payload)
		require.NoError(t, err)
		_, err = certificate.ParseMessage(m)
		require.ErrorIs(t, err, certificate.ErrNotStatement)
	}
}

func TestEncodingsRoundTripAndAreCanonical(t *testing.T) {
	f := newFixture(t, 10, 10, 10)
	c := f.sign(f.statement(), 0, 1, 2)
	back, err := certificate.Parse(c.Bytes())
	require.NoError(t, err)
	require.Equal(t, c, back)

	_, err = certificate.Parse(append(c.Bytes(), 0))
	require.ErrorIs(t, err, certificate.ErrMalformed)
	_, err = certificate.Parse(c.Bytes()[:20])
	require.ErrorIs(t, err, certificate.ErrMalformed)
	wrongVersion := c.Bytes()
	wrongVersion[1] = 9
	_, err = certificate.Parse(wrongVersion)
	require.ErrorIs(t, err, certificate.ErrUnknownVersion)

	j, err := json.Marshal(c)
	require.NoError(t, err)
	var fromJSON certificate.Certificate
	require.NoError(t, json.Unmarshal(j, &fromJSON))
	require.Equal(t, *c, fromJSON)
	_, err = certificate.Verify(&fromJSON, networkID, chainID, f.set)
	require.NoError(t, err)
}

func TestValidatorSetFile(t *testing.T) {
	f := newFixture(t, 10, 20, 30)
	path := filepath.Join(t.TempDir(), "set.json")
	b, err := json.Marshal(f.set)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	read, err := certificate.ReadValidatorSet(path)
	require.NoError(t, err)
	require.Equal(t, f.set, read)
	_, err = certificate.Verify(f.sign(f.statement(), 1, 2), networkID, chainID, read)
	require.NoError(t, err, "50 of 60 is a supermajority")

	dup := read
	dup.Validators = append(dup.Validators, dup.Validators[0])
	_, err = dup.Canonical()
	require.ErrorIs(t, err, certificate.ErrBadValidatorSet)
	bad := read
	bad.Validators = append([]certificate.Validator(nil), read.Validators...)
	bad.Validators[0].PublicKey = "0x1234"
	_, err = bad.Canonical()
	require.ErrorIs(t, err, certificate.ErrBadValidatorSet)
}

// TestVerifyRefusesHeightsBeforeTheChain (issue 30, finding 6): subnet
// validators are added one transaction at a time, so at early P-chain
// heights one validator may hold all of the subnet's stake and certify an
// invented chain alone. No certificate below the height the chain was
// created at verifies, and a set that does not name that height verifies
// nothing.
func TestVerifyRefusesHeightsBeforeTheChain(t *testing.T) {
	f := newFixture(t, 10, 10, 10, 10)
	first := f.keys[0]
	early := certificate.NewValidatorSet(subnetID, 3, map[ids.NodeID]*validators.GetValidatorOutput{
		first.NodeID: {NodeID: first.NodeID, PublicKey: first.PublicKey(), Weight: 10},
	})
	early.ChainCreatedAt = 7
	st := f.statement()
	st.PChainHeight, st.BlockID = 3, ids.ID{'i', 'n', 'v', 'e', 'n', 't', 'e', 'd'}
	lone := &fixture{t: t, keys: f.keys[:1], set: early, index: map[ids.NodeID]int{first.NodeID: 0}}
	invented := lone.sign(st, 0)
	_, err := certificate.Verify(invented, networkID, chainID, early)
	require.ErrorIs(t, err, certificate.ErrBeforeChain, "all of the stake at height 3, one validator: still refused")

	early.ChainCreatedAt = 0
	_, err = certificate.Verify(invented, networkID, chainID, early)
	require.ErrorIs(t, err, certificate.ErrNoChainCreation)
	unbounded := f.set
	unbounded.ChainCreatedAt = 0
	_, err = certificate.Verify(f.sign(f.statement(), 0, 1, 2), networkID, chainID, unbounded)
	require.ErrorIs(t, err, certificate.ErrNoChainCreation, "a set without the creation height verifies nothing")

	at := f.set // created at 7, the certificate's own height: fine
	_, err = certificate.Verify(f.sign(f.statement(), 0, 1, 2), networkID, chainID, at)
	require.NoError(t, err)
}
