package vm_test

// Reads that never go back in time (issue 30): a node answers reads only
// from state it can vouch for, and says how new that state is.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/snow"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/rpc"
)

// copyDB is a copy of node i's database as it is now: what an operator
// restores from a backup.
func (nw *net) copyDB(i int) *memdb.Database {
	out := memdb.New()
	it := nw.dbs[i].NewIterator()
	defer it.Release()
	for it.Next() {
		require.NoError(nw.t, out.Put(it.Key(), it.Value()))
	}
	require.NoError(nw.t, it.Error())
	return out
}

// catchUp has v accept node src's blocks above its own last accepted one,
// as avalanchego's bootstrapping does.
func (nw *net) catchUp(v *vm.VM, src int) {
	ctx := context.Background()
	from := v.Chain().LastAccepted().Block.Height
	to := nw.vms[src].Chain().LastAccepted().Block.Height
	for h := from + 1; h <= to; h++ {
		b, err := nw.vms[src].Chain().AcceptedAt(h)
		require.NoError(nw.t, err)
		blk, err := v.ParseBlock(ctx, b.Bytes())
		require.NoError(nw.t, err)
		if b.HasPChainHeight {
			require.NoError(nw.t, blk.(snowblock.WithVerifyContext).VerifyWithContext(ctx, &snowblock.Context{PChainHeight: b.PChainHeight}))
		} else {
			require.NoError(nw.t, blk.Verify(ctx))
		}
		require.NoError(nw.t, blk.Accept(ctx))
	}
}

// notReadyReason is the reason a NotReady answer names (its data's
// "reason"), or its message when it names none.
func notReadyReason(t *testing.T, e *rpcErr) string {
	t.Helper()
	require.NotNil(t, e, "a NotReady answer")
	require.Equal(t, api.CodeNotReady, e.Code, "a NotReady answer: %s", e.Message)
	var d struct {
		Reason string `json:"reason"`
	}
	if len(e.Data) > 0 {
		require.NoError(t, json.Unmarshal(e.Data, &d))
	}
	if d.Reason == "" {
		return e.Message
	}
	return d.Reason
}

// TestBootstrappingNodeAnswersNotReady (issue 30, finding 3): a node
// restarted from an old copy of its database answers reads from that old
// state until avalanchego has bootstrapped it. While avalanchego says it is
// bootstrapping (SetState), every read is NotReady, named; once it says
// normal operation, reads answer the state it caught up to.
func TestBootstrappingNodeAnswersNotReady(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNet(t, 2)
	nw.ready(10)
	rk := nw.rangeOf(0, "boot")
	nw.allocate(0, rk, 3, 1)
	_, err := nw.round(0, 10)
	require.NoError(err)
	old := nw.copyDB(1)
	nw.allocate(0, rk, 1<<20, 1) // one reservation the backup never saw
	_, err = nw.round(0, 10)
	require.NoError(err)
	require.Equal(uint64(3+1<<20), counter(t, nw.vms[1], rk))

	restored := nw.startOn(1, old)
	require.NoError(restored.SetState(ctx, snow.Bootstrapping))
	h, err := restored.Handler()
	require.NoError(err)
	url := serve(t, h)
	var a api.AllocationReply
	e := rpcCall(t, url, "getAllocation", api.RangeArgs{Range: rk}, &a)
	require.NotNil(e, "a bootstrapping node answered %s's counter from its old state: %d", rk, a.Next)
	require.Equal("bootstrapping", notReadyReason(t, e))
	for _, m := range []struct {
		method string
		args   any
	}{
		{"getOwner", api.RangeArgs{Range: rk}},
		{"getMembership", api.Empty{}},
		{"getManifest", api.ManifestArgs{Bucket: rk, Key: "k"}},
	} {
		require.Equal("bootstrapping", notReadyReason(t, rpcCall(t, url, m.method, m.args, nil)), m.method)
	}

	nw.catchUp(restored, 0)
	require.NoError(restored.SetState(ctx, snow.NormalOp))
	require.Nil(rpcCall(t, url, "getAllocation", api.RangeArgs{Range: rk}, &a))
	require.Equal(uint64(3+1<<20), a.Next, "after bootstrapping, the state it caught up to")
}

// serve serves h for the test's lifetime and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestReadsCarryTheirHead: every read answer names the node's last
// accepted block, so that a client can tell an old answer from a new one;
// a read asking for a height the node has not accepted is NotReady, named,
// with the node's height.
func TestReadsCarryTheirHead(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 2)
	nw.ready(10)
	rk := nw.rangeOf(0, "head")
	tx := nw.allocate(0, rk, 2, 1)
	b, err := nw.round(0, 10)
	require.NoError(err)
	want := api.Head{AcceptedHeight: b.Height(), AcceptedID: api.ID(b.ID())}
	url := nw.server(1)

	var (
		alloc api.AllocationReply
		owner api.OwnerReply
		memb  api.MembershipReply
		node  api.NodeReply
		rc    api.ReceiptReply
		blk   api.BlockReply
	)
	for _, c := range []struct {
		method string
		args   any
		reply  any
		head   *api.Head
	}{
		{"getAllocation", api.RangeArgs{Range: rk}, &alloc, &alloc.Head},
		{"getOwner", api.RangeArgs{Range: rk}, &owner, &owner.Head},
		{"getMembership", api.ReadArgs{}, &memb, &memb.Head},
		{"getNode", api.ReadArgs{}, &node, &node.Head},
		{"getReceipt", api.TxIDArgs{TxID: api.ID(tx.ID())}, &rc, &rc.Head},
		{"getBlock", api.HeightArgs{Height: 1}, &blk, &blk.Head},
	} {
		require.Nil(rpcCall(t, url, c.method, c.args, c.reply), c.method)
		require.Equal(want, *c.head, c.method)
	}
	require.Equal(uint64(2), alloc.Next)
	require.Empty(node.NotReady)

	// At least the height it accepted: answered; one above: NotReady.
	require.Nil(rpcCall(t, url, "getAllocation", api.RangeArgs{Range: rk, AtLeast: api.AtLeast{MinHeight: b.Height()}}, &alloc))
	e := rpcCall(t, url, "getAllocation", api.RangeArgs{Range: rk, AtLeast: api.AtLeast{MinHeight: b.Height() + 1}}, nil)
	require.Equal("below_min_height", notReadyReason(t, e))
	var d api.RetryData
	require.NoError(json.Unmarshal(e.Data, &d))
	require.Equal(b.Height(), d.AcceptedHeight, "the refusal names the node's height")
	for _, m := range []struct {
		method string
		args   any
	}{
		{"getOwner", api.RangeArgs{Range: rk, AtLeast: api.AtLeast{MinHeight: b.Height() + 1}}},
		{"getMembership", api.ReadArgs{AtLeast: api.AtLeast{MinHeight: b.Height() + 1}}},
		{"getManifest", api.ManifestArgs{Bucket: rk, Key: "k", AtLeast: api.AtLeast{MinHeight: b.Height() + 1}}},
		{"getReceipt", api.TxIDArgs{TxID: api.ID(tx.ID()), AtLeast: api.AtLeast{MinHeight: b.Height() + 1}}},
		{"getBlock", api.HeightArgs{Height: 1, AtLeast: api.AtLeast{MinHeight: b.Height() + 1}}},
		{"getCertificate", api.HeightArgs{Height: 1, AtLeast: api.AtLeast{MinHeight: b.Height() + 1}}},
	} {
		require.Equal("below_min_height", notReadyReason(t, rpcCall(t, url, m.method, m.args, nil)), m.method)
	}
}

// pushFrom delivers a pushed certificate signature of height from node j
// to v, as the p2p network does (the signature is not checked on arrival).
func (nw *net) pushFrom(v *vm.VM, j int, height uint64) {
	msg := binary.BigEndian.AppendUint64(nil, height)
	msg = append(msg, make([]byte, bls.SignatureLen)...)
	v.Certifier().PushHandler().AppGossip(context.Background(), nw.keys[j].NodeID, msg)
}

// TestNodeBehindItsPeersAnswersNotReady: a node that stopped following the
// chain (paused, partitioned from consensus) while its API keeps
// answering would answer from old state. The other validators' pushed
// signatures say how far they got: once validators with more than a third
// of the stake are more than rpc.MaxLag blocks ahead, reads are NotReady
// (behind_peers) and getNode says so; one validator alone cannot make a
// node refuse.
func TestNodeBehindItsPeersAnswersNotReady(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 4)
	nw.ready(10)
	rk := nw.rangeOf(0, "lag")
	v, url := nw.vms[3], nw.server(3)
	last := v.Chain().LastAccepted().Block.Height
	ahead := last + rpc.MaxLag + 1
	read := func() *rpcErr { return rpcCall(t, url, "getAllocation", api.RangeArgs{Range: rk}, nil) }

	// The certifier learns the validator set as it pushes its own
	// signature on an accepted block, in the background.
	require.Eventually(func() bool {
		nw.pushFrom(v, 0, last)
		nw.pushFrom(v, 1, last)
		h, ok := v.Certifier().PeersHeight()
		return ok && h == last
	}, 10*time.Second, 10*time.Millisecond)
	nw.pushFrom(v, 0, ahead)
	require.Nil(read(), "one validator of four (a quarter of the stake) is not enough")
	nw.pushFrom(v, 1, last+rpc.MaxLag)
	require.Nil(read(), "two validators, but one of them within the bound")
	nw.pushFrom(v, 1, ahead)
	require.Equal("behind_peers", notReadyReason(t, read()))
	var node api.NodeReply
	require.Nil(rpcCall(t, url, "getNode", api.ReadArgs{}, &node), "getNode answers, and says why reads do not")
	require.Equal("behind_peers", node.NotReady)
	require.Equal(last, node.AcceptedHeight)
}

// TestOwnerReadsRefuseAFormerOrLaggingOwner (review item 4): a filer reads
// a bucket at its owner, which answers a waited write only once it accepted
// it, so that every filer reads what another was answered for. That holds
// only if the node answering is still the owner and current. A read that
// asks for the owner (asOwner) is refused by a node that is not the
// bucket's owner in its membership (NotOwner, with the owner, so the client
// follows it) and by an owner that validators holding more than a third of
// the stake are ahead of by even one block (behind_peers): a former owner
// that stopped following the chain must not answer for the bucket. Plain
// reads keep their bound (rpc.MaxLag).
func TestOwnerReadsRefuseAFormerOrLaggingOwner(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 4)
	nw.ready(10)
	bucket := nw.rangeOf(0, "owned")
	asOwner := api.ManifestArgs{Bucket: bucket, Key: "k", OwnerRead: api.OwnerRead{AsOwner: true}}

	e := rpcCall(t, nw.server(1), "getManifest", asOwner, nil)
	require.NotNil(e, "a node that is not the owner answered an owner read")
	require.Equal(api.CodeNotOwner, e.Code, e.Message)
	var hint api.NotOwnerData
	require.NoError(json.Unmarshal(e.Data, &hint))
	require.Equal(api.NodeID(nw.keys[0].NodeID), hint.Owner)
	list := api.ListManifestsArgs{Bucket: bucket, OwnerRead: api.OwnerRead{AsOwner: true}}
	e = rpcCall(t, nw.server(1), "listManifests", list, nil)
	require.NotNil(e)
	require.Equal(api.CodeNotOwner, e.Code, e.Message)
	e = rpcCall(t, nw.server(1), "getManifest", api.ManifestArgs{Bucket: bucket, Key: "k"}, nil)
	require.Equal(api.CodeNotFound, e.Code, "a plain read answers anywhere")

	owner, url := nw.vms[0], nw.server(0)
	e = rpcCall(t, url, "getManifest", asOwner, nil)
	require.Equal(api.CodeNotFound, e.Code, "the owner answers")
	last := owner.Chain().LastAccepted().Block.Height
	require.Eventually(func() bool {
		nw.pushFrom(owner, 1, last)
		nw.pushFrom(owner, 2, last)
		h, ok := owner.Certifier().PeersHeight()
		return ok && h == last
	}, 10*time.Second, 10*time.Millisecond)
	nw.pushFrom(owner, 1, last+1)
	nw.pushFrom(owner, 2, last+1)
	require.Equal("behind_peers", notReadyReason(t, rpcCall(t, url, "getManifest", asOwner, nil)))
	require.Equal("behind_peers", notReadyReason(t, rpcCall(t, url, "listManifests", list, nil)))
	e = rpcCall(t, url, "getManifest", api.ManifestArgs{Bucket: bucket, Key: "k"}, nil)
	require.Equal(api.CodeNotFound, e.Code, "a plain read one block behind still answers")
}
