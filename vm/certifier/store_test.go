package certifier

import (
	"context"
	"crypto/rand"
	"errors"
	"math/big"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	blst "github.com/supranational/blst/bindings/go"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/block"
)

// countingDB counts the batches written to it.
type countingDB struct {
	database.Database
	writes *atomic.Int64
}

func (d countingDB) NewBatch() database.Batch {
	return countingBatch{d.Database.NewBatch(), d.writes}
}

type countingBatch struct {
	database.Batch
	writes *atomic.Int64
}

func (b countingBatch) Write() error {
	b.writes.Add(1)
	return b.Batch.Write()
}

// chainOf is a certifier of the first of n equal validators, started
// without a network, whose peers push their signatures through certify.
type chainOf struct {
	t      *testing.T
	c      *Certifier
	keys   []*txstest.Key
	blocks []*block.Block
}

func newChainOf(t *testing.T, n int, db database.Database) *chainOf {
	keys, err := txstest.NewKeys("store", n)
	require.NoError(t, err)
	first, err := block.New(ids.ID{'p'}, 1, 1, true, 10, ids.ID{'r', 1}, nil, block.DefaultLimits())
	require.NoError(t, err)
	return &chainOf{t: t, keys: keys, blocks: []*block.Block{first}, c: startOn(t, keys, db, first)}
}

func startOn(t *testing.T, keys []*txstest.Key, db database.Database, last *block.Block) *Certifier {
	c, err := New(Config{NetworkID: 5, ChainID: ids.ID{'c'}, NodeID: keys[0].NodeID, Signer: keys[0].Signer(5, ids.ID{'c'}), Validators: keySet(keys)},
		db, noBlocks{}, last)
	require.NoError(t, err)
	c.Start(nil, nil)
	t.Cleanup(c.Stop)
	return c
}

// certify accepts the next block and has the signers push their
// signatures of it (raw bytes by index: a signer's own when nil), then
// waits for its certificate.
func (ch *chainOf) certify(signers []int, raw map[int][]byte) *block.Block {
	t := ch.t
	parent := ch.blocks[len(ch.blocks)-1]
	b, err := block.New(parent.ID(), parent.Height+1, parent.Timestamp+1, true, 10, ids.ID{'r', byte(parent.Height)}, nil, block.DefaultLimits())
	require.NoError(t, err)
	ch.blocks = append(ch.blocks, b)
	ch.c.Accepted(b)
	st, _ := Statement(5, ids.ID{'c'}, b)
	msg, err := st.Message()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ch.c.mu.Lock()
		defer ch.c.mu.Unlock()
		return ch.c.members.Len() == len(ch.keys)
	}, 10*time.Second, time.Millisecond, "the certifier learns the set pushing its own signature")
	for _, i := range signers {
		sig, ok := raw[i]
		if !ok {
			sig, err = ch.keys[i].Signer(5, ids.ID{'c'}).Sign(msg)
			require.NoError(t, err)
		}
		require.Empty(t, ch.c.keepPush(ch.keys[i].NodeID, encodePush(b.Height, sig)))
	}
	require.Eventually(t, func() bool { return ch.c.Certified() == b.Height }, 10*time.Second, time.Millisecond, "certificate of height %d", b.Height)
	return b
}

// signedByAllBut checks b's certificate offline against the set: it
// verifies and names every validator but validator absent as a signer.
func (ch *chainOf) signedByAllBut(b *block.Block, absent int) {
	t := ch.t
	cert, err := ch.c.Covering(b.Height)
	require.NoError(t, err)
	vals, err := keySet(ch.keys).GetValidatorSet(context.Background(), 10, ids.Empty)
	require.NoError(t, err)
	vs, err := validators.FlattenValidatorSet(vals)
	require.NoError(t, err)
	res, err := certificate.VerifyCanonical(cert, vs)
	require.NoError(t, err)
	require.Equal(t, len(ch.keys)-1, res.Signers)
	signers := set.BitsFromBytes(cert.Signers)
	for i, v := range vs.Validators {
		require.Equal(t, v.NodeIDs[0] != ch.keys[absent].NodeID, signers.Contains(i), "validator %s", v.NodeIDs[0])
	}
}

// TestCertificatesAreSavedInBatches: certificates are readable as soon as
// they are made, written to the database several at a time rather than
// one batch each, within saveAfter of the oldest waiting one, and all of
// them by Stop; a node restarted on that database finds every one.
func TestCertificatesAreSavedInBatches(t *testing.T) {
	require := require.New(t)
	writes := &atomic.Int64{}
	db := countingDB{memdb.New(), writes}
	ch := newChainOf(t, 3, db)

	const n = 6
	for range n {
		b := ch.certify([]int{1, 2}, nil)
		cert, err := ch.c.Covering(b.Height)
		require.NoError(err, "readable at once, saved or not")
		require.Equal(b.ID(), cert.BlockID)
	}
	require.Less(writes.Load(), int64(n), "one batch for several certificates")
	require.Eventually(func() bool {
		ch.c.store.mu.Lock()
		defer ch.c.store.mu.Unlock()
		return len(ch.c.store.unsaved) == 0
	}, 10*time.Second, 5*time.Millisecond, "saved within saveAfter, with no further certificate to trigger it")

	b := ch.certify([]int{1, 2}, nil) // waits in memory: Stop saves it
	ch.c.Stop()
	restarted := startOn(t, ch.keys, db, b)
	require.Equal(b.Height, restarted.Certified())
	for _, blk := range ch.blocks[1:] {
		cert, err := restarted.Covering(blk.Height)
		require.NoError(err)
		require.Equal(blk.ID(), cert.BlockID, "height %d", blk.Height)
	}
}

// outsideTheGroup is 96 bytes that decompress to a point on the curve of
// signatures but outside their group.
func outsideTheGroup(t *testing.T) []byte {
	for range 1000 {
		raw := make([]byte, bls.SignatureLen)
		_, _ = rand.Read(raw)
		raw[0] = 0x80 | raw[0]&0x0f // compressed, finite, x below the field's modulus
		raw[48] &= 0x0f
		if sig := new(bls.Signature).Uncompress(raw); sig != nil && !sig.SigValidate(false) {
			return raw
		}
	}
	t.Fatal("no point outside the group found")
	return nil
}

// TestPushOutsideTheSignatureGroupIsDropped: pushed signatures are only
// decompressed; one that lies on the curve but outside the signature
// group spoils the aggregate, is found when each is checked alone, is
// counted and left out, and the certificate of the other three verifies
// offline.
func TestPushOutsideTheSignatureGroupIsDropped(t *testing.T) {
	require := require.New(t)
	ch := newChainOf(t, 4, memdb.New())
	bad := outsideTheGroup(t)
	_, err := bls.SignatureFromBytes(bad)
	require.ErrorIs(err, bls.ErrInvalidSignature, "what a full decoding refuses")

	b := ch.certify([]int{3, 1, 2}, map[int][]byte{3: bad})
	ch.signedByAllBut(b, 3)
	var m dto.Metric
	require.NoError(ch.c.metrics.refusals.WithLabelValues("bad_signature").Write(&m))
	require.Equal(1.0, m.GetCounter().GetValue())
}

// failingDB fails every batch write while failing is set.
type failingDB struct {
	database.Database
	failing *atomic.Bool
}

func (d failingDB) NewBatch() database.Batch { return failingBatch{d.Database.NewBatch(), d.failing} }

type failingBatch struct {
	database.Batch
	failing *atomic.Bool
}

func (b failingBatch) Write() error {
	if b.failing.Load() {
		return errors.New("disk full")
	}
	return b.Batch.Write()
}

// TestUnsavedCertificatesStayBounded: while the database refuses writes,
// certificates stay readable from memory, at most maxKept of them (the
// oldest dropped: the newer ones cover their heights), and once it heals
// they are saved.
func TestUnsavedCertificatesStayBounded(t *testing.T) {
	require := require.New(t)
	failing := &atomic.Bool{}
	failing.Store(true)
	s := &store{db: failingDB{memdb.New(), failing}}
	const n = 3 * maxKept
	for h := uint64(1); h <= n; h++ {
		err := s.add(&certificate.Certificate{Statement: certificate.Statement{Height: h}}, time.Now())
		if h%maxUnsaved == 0 {
			require.Error(err, "a full batch is written at once, and fails")
		}
		c, err := s.covering(h)
		require.NoError(err, "readable while unsaved")
		require.Equal(h, c.Height)
	}
	require.Len(s.unsaved, maxKept)
	c, err := s.covering(1)
	require.NoError(err)
	require.Equal(uint64(n-maxKept+1), c.Height, "a dropped height is covered by the oldest kept")

	failing.Store(false)
	require.NoError(s.save(time.Now()))
	require.Empty(s.unsaved)
	last, err := s.last()
	require.NoError(err)
	require.Equal(uint64(n), last)
	c, err = s.covering(n - 5)
	require.NoError(err)
	require.Equal(uint64(n-5), c.Height, "read from the database now")
}

// BenchmarkDecodeSignature: what decodeSignature saves on every pushed or
// requested signature, against avalanchego's full decoding (which checks
// membership in the signature group).
func BenchmarkDecodeSignature(b *testing.B) {
	keys, err := txstest.NewKeys("decode", 1)
	require.NoError(b, err)
	msg, err := warp.NewUnsignedMessage(5, ids.ID{'c'}, []byte("statement"))
	require.NoError(b, err)
	raw, err := keys[0].Signer(5, ids.ID{'c'}).Sign(msg)
	require.NoError(b, err)
	b.Run("decompress", func(b *testing.B) {
		for range b.N {
			if _, err := decodeSignature(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decompress+group-check", func(b *testing.B) {
		for range b.N {
			if _, err := bls.SignatureFromBytes(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// torsion is a point of the signature curve killed by the group's order:
// the group order times a point outside the group. blst multiplies by
// scalars of 144 bits or more with an endomorphism that holds inside the
// group only, so the order is applied in two halves.
func torsion(t *testing.T) *blst.P2 {
	// The order r of the BLS12-381 groups, big endian.
	r, ok := new(big.Int).SetString("73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001", 16)
	require.True(t, ok)
	le := func(x *big.Int) []byte { // blst scalars are little endian
		b := x.Bytes()
		slices.Reverse(b)
		return b
	}
	hi := new(big.Int).Rsh(r, 128)
	lo := new(big.Int).Sub(r, new(big.Int).Lsh(hi, 128))
	var q blst.P2
	q.FromAffine(new(blst.P2Affine).Uncompress(outsideTheGroup(t)))
	shifted := q.Mult(le(new(big.Int).Lsh(big.NewInt(1), 128)), 129)
	tp := shifted.Mult(le(hi), hi.BitLen())
	tp.AddAssign(q.Mult(le(lo), lo.BitLen()))
	require.False(t, tp.ToAffine().InG2())
	return tp
}

// TestSignaturesCancellingOutsideTheGroup: two colluding validators push
// signatures moved off the group by opposite torsion points. Each alone
// is no signature (a full decoding refuses it), but together they cancel:
// the certificate they make with a third is a valid signature of the
// three, which each colluder could have made with its own key. A
// certificate never claims a validator that did not sign.
func TestSignaturesCancellingOutsideTheGroup(t *testing.T) {
	require := require.New(t)
	ch := newChainOf(t, 4, memdb.New())
	tp := torsion(t)
	next := ch.blocks[len(ch.blocks)-1]
	b, err := block.New(next.ID(), next.Height+1, next.Timestamp+1, true, 10, ids.ID{'r', byte(next.Height)}, nil, block.DefaultLimits())
	require.NoError(err)
	st, _ := Statement(5, ids.ID{'c'}, b)
	msg, err := st.Message()
	require.NoError(err)
	shift := func(i int, by *blst.P2) []byte {
		raw, err := ch.keys[i].Signer(5, ids.ID{'c'}).Sign(msg)
		require.NoError(err)
		var p blst.P2
		p.FromAffine(new(blst.P2Affine).Uncompress(raw))
		out := p.Add(by).Compress()
		_, err = bls.SignatureFromBytes(out)
		require.ErrorIs(err, bls.ErrInvalidSignature, "alone, no signature")
		return out
	}
	minus := new(blst.P2).Sub(tp)
	bad := map[int][]byte{1: shift(1, tp), 2: shift(2, minus)}

	got := ch.certify([]int{1, 2}, bad)
	require.Equal(b.ID(), got.ID())
	ch.signedByAllBut(b, 3) // a valid signature of this node and the two colluders
}
