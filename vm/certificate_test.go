package vm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p/acp118"
	"github.com/ava-labs/avalanchego/proto/pb/sdk"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/certifier"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
)

// certifiedUpTo waits until every VM but the skipped ones holds a
// certificate covering height.
func (nw *net) certifiedUpTo(height uint64, skip ...int) {
	require.Eventually(nw.t, func() bool {
		for i, v := range nw.vms {
			if !slices.Contains(skip, i) && v.Certifier().Certified() < height {
				return false
			}
		}
		return true
	}, 20*time.Second, 5*time.Millisecond, "certificates up to height %d", height)
}

// verifyOffline checks a certificate the way a client does: against the
// P-chain set at its height, with nothing of the node that served it.
func (nw *net) verifyOffline(c *certificate.Certificate) certificate.Result {
	vs := certificate.NewValidatorSet(subnetID, c.PChainHeight, nw.sets[c.PChainHeight])
	vs.ChainCreatedAt = 10 // the lowest P-chain height the net's blocks use
	res, err := certificate.Verify(c, 5, chainID, vs)
	require.NoError(nw.t, err)
	return res
}

// commit allocates once in node i's range name and has node i build the
// block, accepted everywhere: the transaction and the block's height.
func (nw *net) commit(i int, name string) (ids.ID, uint64) {
	tx, err := nw.vms[i].Writer().Allocate(context.Background(), []txs.AllocateEntry{{Range: nw.rangeOf(i, name), Count: 1}})
	require.NoError(nw.t, err)
	b, err := nw.round(i, 10)
	require.NoError(nw.t, err)
	return tx.ID(), b.Height()
}

// TestEveryAcceptedBlockBecomesFinal: once the validators accepted a
// block, every node collects a certificate over it (or a later block) from
// more than 2/3 of the stake; receipts say final and carry a certificate a
// client verifies offline; a certificate above a receipt's block covers it
// through the parent links of the blocks in between.
func TestEveryAcceptedBlockBecomesFinal(t *testing.T) {
	require := require.New(t)
	nw, _ := newGossipNet(t, 3)
	nw.ready(10)

	var (
		txIDs []ids.ID
		last  uint64
	)
	for i := range nw.vms {
		var txID ids.ID
		txID, last = nw.commit(i, "final")
		txIDs = append(txIDs, txID)
	}
	nw.certifiedUpTo(last)

	for _, id := range txIDs {
		for i := range nw.vms {
			var rc api.ReceiptReply
			require.Nil(rpcCall(t, nw.server(i), "getReceipt", api.TxIDArgs{TxID: id}, &rc))
			require.Equal(api.StatusAccepted, rc.Status)
			require.True(rc.Final, "receipt of %s on node %d", id, i)
			require.NotNil(rc.Certificate)
			require.Equal(rc.CertifiedBy, rc.Certificate.Height)
			require.GreaterOrEqual(rc.Certificate.Height, rc.Height)
			res := nw.verifyOffline(rc.Certificate)
			require.Equal(uint64(30), res.SignedWeight, "three equal validators: all must sign to pass 2/3")
			nw.covers(i, rc.Certificate, rc.Height, id)
		}
	}

	for h := uint64(2); h <= last; h++ {
		var reply api.CertificateReply
		require.Nil(rpcCall(t, nw.server(1), "getCertificate", api.HeightArgs{Height: h}, &reply))
		require.GreaterOrEqual(reply.Certificate.Height, h)
		nw.verifyOffline(&reply.Certificate)
	}
	var reply api.CertificateReply
	// Above this node's last accepted block: not accepted here yet (another
	// node may have it), never "not found".
	e := rpcCall(t, nw.server(1), "getCertificate", api.HeightArgs{Height: last + 1}, &reply)
	require.Equal("not_accepted_yet", notReadyReason(t, e))
	var br api.BlockReply
	e = rpcCall(t, nw.server(1), "getBlock", api.HeightArgs{Height: last + 1}, &br)
	require.Equal("not_accepted_yet", notReadyReason(t, e))
	e = rpcCall(t, nw.server(1), "getBlock", api.HeightArgs{Height: ^uint64(0)}, &br)
	require.Equal("not_accepted_yet", notReadyReason(t, e))
}

// TestSignaturesArePushedOnAccept: each validator pushes its signature to
// the others as it accepts a block, so a certificate needs no request
// round: with every signature request lost, every block still becomes
// final on every node.
func TestSignaturesArePushedOnAccept(t *testing.T) {
	require := require.New(t)
	nw, r := newGossipNet(t, 3)
	r.dropIf(func(gossip bool, msg []byte) bool { return !gossip && handlerOf(msg) == acp118.HandlerID })
	nw.ready(10)
	var last uint64
	for i := range nw.vms {
		_, last = nw.commit(i, "pushed")
	}
	nw.certifiedUpTo(last)
	for i := range nw.vms {
		var reply api.CertificateReply
		require.Nil(rpcCall(t, nw.server(i), "getCertificate", api.HeightArgs{Height: last}, &reply))
		require.Equal(uint64(30), nw.verifyOffline(&reply.Certificate).SignedWeight)
	}
}

// TestRequestsCoverLostPushes: with every pushed signature lost, nodes ask
// for the signatures they miss, and every block still becomes final.
func TestRequestsCoverLostPushes(t *testing.T) {
	nw, r := newGossipNet(t, 3)
	r.dropIf(func(gossip bool, msg []byte) bool { return gossip && handlerOf(msg) == certifier.PushHandlerID })
	nw.ready(10)
	_, last := nw.commit(1, "unpushed")
	nw.certifiedUpTo(last)
}

// TestCertificatesOff: a node whose chain config turns certificates off
// pushes nothing and asks nobody; its receipts are never final, a wait for
// "final" is refused with certificates_off, and its health does not stall.
// It still signs what it accepted for validators that ask, so the others
// (three of four) certify.
func TestCertificatesOff(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw, r := newGossipNetWith(t, 4, func(i int, _ *txstest.Key, cfg *vm.Config) {
		if i == 0 {
			cc := config.DefaultChainConfig()
			cc.Certificates = false
			cfg.ChainConfig = &cc
		}
	})
	var fromOff atomic.Int64
	off := nw.keys[0].NodeID
	r.watchWith(func(from ids.NodeID, gossip bool, msg []byte) {
		if from == off && (gossip && handlerOf(msg) == certifier.PushHandlerID || !gossip && handlerOf(msg) == acp118.HandlerID) {
			fromOff.Add(1)
		}
	})
	nw.ready(10)
	txID, last := nw.commit(0, "uncertified")
	nw.certifiedUpTo(last, 0)

	require.Zero(nw.vms[0].Certifier().Certified())
	require.Zero(fromOff.Load(), "no pushes, no requests from the node without certificates")
	var rc api.ReceiptReply
	require.Nil(rpcCall(t, nw.server(0), "getReceipt", api.TxIDArgs{TxID: txID}, &rc))
	require.Equal(api.StatusAccepted, rc.Status)
	require.False(rc.Final)
	require.ErrorIs(nw.vms[0].Certifier().WaitFinal(ctx, last), certifier.ErrOff, "a wait for final is refused at once")
	var cr api.CertificateReply
	e := rpcCall(t, nw.server(0), "getCertificate", api.HeightArgs{Height: last}, &cr)
	require.NotNil(e)
	require.Equal(api.CodeNotFound, e.Code)
	require.JSONEq(`{"reason":"certificates_off"}`, string(e.Data))
	nw.now.Add(61_000) // past the stall bound
	details, err := nw.vms[0].Certifier().Health()
	require.NoError(err)
	require.Equal("off", details["certificates"])

	require.Nil(rpcCall(t, nw.server(1), "getReceipt", api.TxIDArgs{TxID: txID}, &rc))
	require.True(rc.Final, "the others certify, with its signature or without")
}

// TestWaitReceiptAnswersWhenFinal: waitReceipt holds the request until the
// transaction's block is accepted and certified, then answers the final
// receipt; with wait "accepted" (the default) it answers at acceptance; a
// transaction the node does not know is answered at once.
func TestWaitReceiptAnswersWhenFinal(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw, _ := newGossipNet(t, 3)
	nw.ready(10)
	rk := nw.rangeOf(0, "waited")
	tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 1}})
	require.NoError(err)
	txID := tx.ID()

	type answer struct {
		rc api.ReceiptReply
		e  *rpcErr
	}
	final, accepted := make(chan answer, 1), make(chan answer, 1)
	for wait, ch := range map[api.Wait]chan answer{api.WaitFinal: final, api.WaitNone: accepted} {
		go func() {
			var a answer
			// On the owner, which knows the transaction from the start
			// (another node may not have it from gossip yet, and answers
			// an unknown transaction at once).
			a.e = rpcCall(t, nw.server(0), "waitReceipt", api.WaitReceiptArgs{TxID: txID, Wait: wait, WaitMs: 20_000}, &a.rc)
			ch <- a
		}()
	}
	// A transaction this node does not know is answered at once, not
	// waited for until the bound: the client asks elsewhere.
	var unknown api.ReceiptReply
	require.Nil(rpcCall(t, nw.server(1), "waitReceipt", api.WaitReceiptArgs{TxID: ids.GenerateTestID(), WaitMs: 5_000}, &unknown))
	require.Equal(api.StatusUnknown, unknown.Status)

	// Both are waiting on the node: nothing answers before the block.
	require.Never(func() bool { return len(final)+len(accepted) > 0 }, 100*time.Millisecond, 10*time.Millisecond)

	_, err = nw.round(0, 10)
	require.NoError(err)
	for _, ch := range []chan answer{accepted, final} {
		select {
		case a := <-ch:
			require.Nil(a.e)
			require.Equal(api.StatusAccepted, a.rc.Status)
			if ch == final {
				require.True(a.rc.Final)
				require.NotNil(a.rc.Certificate)
				nw.verifyOffline(a.rc.Certificate)
			}
		case <-time.After(20 * time.Second):
			require.Fail("waitReceipt did not answer")
		}
	}
}

// covers checks, from node i's blocks, that c's block descends from the
// block at height that carries txID.
func (nw *net) covers(i int, c *certificate.Certificate, height uint64, txID ids.ID) {
	want := c.BlockID
	for h := c.Height; ; h-- {
		var br api.BlockReply
		require.Nil(nw.t, rpcCall(nw.t, nw.server(i), "getBlock", api.HeightArgs{Height: h}, &br))
		raw, err := hex.DecodeString(strings.TrimPrefix(br.Bytes, "0x"))
		require.NoError(nw.t, err)
		require.Equal(nw.t, want, ids.ID(sha256.Sum256(raw)), "block %d is the one named above it", h)
		b, err := block.Parse(raw, block.DefaultLimits(), txs.DefaultLimits())
		require.NoError(nw.t, err)
		if h == height {
			found := false
			for _, tx := range b.Txs {
				found = found || tx.ID() == txID
			}
			require.True(nw.t, found, "the block at the receipt's height carries the transaction")
			if h == c.Height {
				require.Equal(nw.t, c.StateRoot, b.StateRoot)
			}
			return
		}
		want = b.Parent
	}
}

// TestWaitFinal: allocate with wait "final" returns a final receipt whose
// certificate verifies.
func TestWaitFinal(t *testing.T) {
	require := require.New(t)
	nw, _ := newGossipNet(t, 3)
	nw.ready(10)
	rk := nw.rangeOf(0, "waitfinal")

	type result struct {
		reply api.AllocateReply
		err   *rpcErr
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = rpcCall(t, nw.server(0), "allocate", map[string]any{"range": rk, "count": 4, "wait": "final", "waitMs": 15000}, &r.reply)
		done <- r
	}()
	require.Eventually(func() bool { return nw.vms[0].Mempool().Len() > 0 }, 10*time.Second, time.Millisecond)
	_, err := nw.round(0, 10)
	require.NoError(err)
	select {
	case r := <-done:
		require.Nil(r.err)
		rc := r.reply.Receipt
		require.NotNil(rc)
		require.True(rc.Final)
		require.GreaterOrEqual(rc.Certificate.Height, rc.Height)
		nw.verifyOffline(rc.Certificate)
	case <-time.After(20 * time.Second):
		t.Fatal("allocate with wait final did not return")
	}

	var reply api.AllocateReply
	e := rpcCall(t, nw.server(0), "allocate", map[string]any{"range": rk, "count": 1, "wait": "soon"}, &reply)
	require.NotNil(e, "an unknown wait is refused")
	require.Equal(api.CodeInvalidParams, e.Code)
}

// TestNodeSignsOnlyWhatItAccepted: a validator's signature on a statement
// is evidence that it accepted that very block. It refuses a block it has
// only verified, a height above its last accepted, a statement altering
// an accepted block's ID, state root or P-chain height, a block without a
// P-chain height, another chain's message, and a 32-byte payload (what
// owners sign for transactions).
func TestNodeSignsOnlyWhatItAccepted(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw, _ := newGossipNet(t, 3)
	nw.ready(10)
	handler := nw.vms[0].Certifier().Handler()
	ask := func(msg *warp.UnsignedMessage) ([]byte, *common.AppError) {
		req, err := proto.Marshal(&sdk.SignatureRequest{Message: msg.Bytes()})
		require.NoError(err)
		resp, appErr := handler.AppRequest(ctx, nw.keys[1].NodeID, time.Now().Add(time.Second), req)
		if appErr != nil {
			return nil, appErr
		}
		var r sdk.SignatureResponse
		require.NoError(proto.Unmarshal(resp, &r))
		return r.Signature, nil
	}
	askStatement := func(st certificate.Statement) *common.AppError {
		msg, err := st.Message()
		require.NoError(err)
		_, appErr := ask(msg)
		return appErr
	}

	accepted := nw.vms[0].Chain().LastAccepted().Block
	st, ok := certifier.Statement(5, chainID, accepted)
	require.True(ok)
	msg, err := st.Message()
	require.NoError(err)
	sig, appErr := ask(msg)
	require.Nil(appErr)
	parsed, err := bls.SignatureFromBytes(sig)
	require.NoError(err)
	require.True(bls.Verify(nw.keys[0].PublicKey(), parsed, msg.Bytes()), "signed with its P-chain key")

	codeOf := func(e *common.AppError) int32 {
		require.NotNil(e)
		return e.Code
	}
	other := st
	other.StateRoot[0] ^= 1
	require.Equal(certifier.CodeConflicts, codeOf(askStatement(other)), "altered state root")
	other = st
	other.BlockID[0] ^= 1
	require.Equal(certifier.CodeConflicts, codeOf(askStatement(other)), "another block at the height")
	other = st
	other.PChainHeight++
	require.Equal(certifier.CodeConflicts, codeOf(askStatement(other)), "another P-chain height")
	other = st
	other.Height += 5
	require.Equal(certifier.CodeNotAcceptedYet, codeOf(askStatement(other)), "above the last accepted height")

	first, err := nw.vms[0].Chain().AcceptedAt(1)
	require.NoError(err)
	require.False(first.HasPChainHeight)
	require.Equal(certifier.CodeNoContext, codeOf(askStatement(certificate.Statement{NetworkID: 5, ChainID: chainID, Height: 1, BlockID: first.ID(), StateRoot: first.StateRoot})))

	// A block every node verified but nobody accepted yet.
	rk := nw.rangeOf(0, "unaccepted")
	_, err = nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 1}})
	require.NoError(err)
	last, err := nw.vms[0].LastAccepted(ctx)
	require.NoError(err)
	require.NoError(nw.vms[0].SetPreference(ctx, last))
	built, err := nw.vms[0].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(err)
	processing := nw.deliver(built, 10)
	pst, ok := certifier.Statement(5, chainID, built.(*chain.Block).Block)
	require.True(ok)
	require.Equal(certifier.CodeNotAcceptedYet, codeOf(askStatement(pst)), "verified is not accepted")
	acceptAll(t, processing)
	require.Nil(askStatement(pst), "signed once accepted")

	otherChain, err := warp.NewUnsignedMessage(5, ids.ID{'o', 't', 'h', 'e', 'r'}, st.Payload())
	require.NoError(err)
	_, appErr = ask(otherChain)
	require.Equal(certifier.CodeNotStatement, codeOf(appErr))
	txHash, err := warp.NewUnsignedMessage(5, chainID, bytes.Repeat([]byte{7}, 32))
	require.NoError(err)
	_, appErr = ask(txHash)
	require.Equal(certifier.CodeNotStatement, codeOf(appErr), "never sign what could pass for a transaction signature")
}

// TestNoCertificateWithoutASupermajority: with one of three equal
// validators unreachable, the other two hold exactly 2/3 of the stake:
// nothing becomes final, health names the missing validator once the
// stall lasts, and certificates resume, covering everything, when it is
// back.
func TestNoCertificateWithoutASupermajority(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw, r := newGossipNet(t, 3)
	nw.ready(10)
	nw.certifiedUpTo(nw.vms[0].Chain().LastAccepted().Block.Height)
	before := nw.vms[0].Certifier().Certified()

	r.setCut(nw.keys[2].NodeID, true)
	txID, last := nw.commit(0, "stall")

	nw.now.Add(61_000) // past the default stall bound
	require.Eventually(func() bool {
		_, err := nw.vms[0].HealthCheck(ctx)
		return err != nil && strings.Contains(err.Error(), nw.keys[2].NodeID.String())
	}, 20*time.Second, 10*time.Millisecond, "health names the validator whose signature is missing")
	_, err := nw.vms[0].HealthCheck(ctx)
	require.ErrorIs(err, certifier.ErrStalled)
	require.Equal(before, nw.vms[0].Certifier().Certified(), "two of three equal validators are not more than 2/3")
	var rc api.ReceiptReply
	require.Nil(rpcCall(t, nw.server(0), "getReceipt", api.TxIDArgs{TxID: txID}, &rc))
	require.Equal(api.StatusAccepted, rc.Status)
	require.False(rc.Final)
	require.Nil(rc.Certificate)

	r.setCut(nw.keys[2].NodeID, false)
	nw.certifiedUpTo(last)
	details, err := nw.vms[0].Certifier().Health()
	require.NoError(err, "%v", details)
	require.Nil(rpcCall(t, nw.server(0), "getReceipt", api.TxIDArgs{TxID: txID}, &rc))
	require.True(rc.Final)
	nw.verifyOffline(rc.Certificate)
}

// liar signs every certificate statement over other bytes: its signatures
// parse but never verify. Everything else it signs honestly.
type liar struct{ warp.Signer }

func (l liar) Sign(msg *warp.UnsignedMessage) ([]byte, error) {
	if _, err := certificate.ParseMessage(msg); err == nil {
		forged, err := warp.NewUnsignedMessage(msg.NetworkID, msg.SourceChainID, append([]byte("forged "), msg.Payload...))
		if err != nil {
			return nil, err
		}
		return l.Signer.Sign(forged)
	}
	return l.Signer.Sign(msg)
}

// TestForgedSignaturesAreDropped: a validator answering with signatures
// that do not verify never makes it into an aggregate; the honest 3 of 4
// still certify, and the liar's own node, whose signature is bad too,
// certifies without it.
func TestForgedSignaturesAreDropped(t *testing.T) {
	require := require.New(t)
	nw, _ := newGossipNetWith(t, 4, func(i int, k *txstest.Key, cfg *vm.Config) {
		if i == 3 {
			cfg.Signer = liar{k.Signer(5, chainID)}
		}
	})
	nw.ready(10)
	_, last := nw.commit(0, "liar")
	nw.certifiedUpTo(last)

	for i := range nw.vms {
		var reply api.CertificateReply
		require.Nil(rpcCall(t, nw.server(i), "getCertificate", api.HeightArgs{Height: last}, &reply))
		res := nw.verifyOffline(&reply.Certificate)
		require.Equal(uint64(30), res.SignedWeight, "node %d: the three honest validators", i)
		vs := certificate.NewValidatorSet(subnetID, reply.Certificate.PChainHeight, nw.sets[reply.Certificate.PChainHeight])
		canonical, err := vs.Canonical()
		require.NoError(err)
		for j, v := range canonical.Validators {
			if v.NodeIDs[0] == nw.keys[3].NodeID {
				require.False(reply.Certificate.Signed(j), "the liar is not among the signers")
			}
		}
	}
}
