package vm_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// manifestsGenesis: a pool for the concurrent writers, and (as every test
// net's genesis) every change of execution from the first block.
var manifestsGenesis = []byte(`{"timestamp": 1000, "mempool": {"maxTxs": 64, "maxBytes": 4194304}, "groupCommitWindowMs": 20}`)

// objectsNet is a 3-node net after the manifests upgrade with a bucket of
// node 0 whose first ids are allocated.
type objectsNet struct {
	*net
	url    string
	bucket string
}

func newObjectsNet(t *testing.T, ids uint64) *objectsNet {
	return newObjectsNetWith(t, ids, manifestsGenesis)
}

// groupingGenesis is manifestsGenesis with a group window long enough that
// concurrent callers started together land in one group even on a loaded
// machine (under make test's parallel packages, 20 ms split them).
var groupingGenesis = []byte(`{"timestamp": 1000, "mempool": {"maxTxs": 64, "maxBytes": 4194304}, "groupCommitWindowMs": 400}`)

// newObjectsNetWith is newObjectsNet on the given genesis.
func newObjectsNetWith(t *testing.T, ids uint64, genesis []byte) *objectsNet {
	nw := newNetWith(t, 3, genesis)
	nw.ready(10)
	on := &objectsNet{net: nw, url: nw.server(0), bucket: nw.rangeOf(0, "obj")}
	var rep api.AllocateReply
	require.Nil(t, rpcCall(t, on.url, "allocate", api.AllocateArgs{Range: on.bucket, Count: ids}, &rep))
	_, err := nw.round(0, 10)
	require.NoError(t, err)
	return on
}

func (on *objectsNet) object(key string, chunkIDs ...uint64) api.PutManifestArgs {
	a := api.PutManifestArgs{Bucket: on.bucket, Key: key, ContentHash: api.ID{byte(len(chunkIDs))}, Attributes: []byte("attrs of " + key), Wait: api.WaitAccepted}
	for _, id := range chunkIDs {
		a.Chunks = append(a.Chunks, api.Chunk{Range: on.bucket, ID: id, Size: 4})
		a.Size += 4
	}
	return a
}

// pendingWrites counts the manifest writes in node 0's pool.
func (on *objectsNet) pendingWrites() int {
	n := 0
	for _, tx := range on.vms[0].Mempool().All() {
		if m, ok := tx.Unsigned.(*txs.ManifestTx); ok {
			n += len(m.Entries)
		}
	}
	return n
}

type putResult struct {
	reply api.PutManifestReply
	err   *rpcErr
}

// putAll sends every write at once, waits until all of them are pending,
// accepts one block and returns the answers.
func (on *objectsNet) putAll(writes []api.PutManifestArgs) []putResult {
	out := make([]putResult, len(writes))
	var wg sync.WaitGroup
	for i := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].err = rpcCall(on.t, on.url, "putManifest", writes[i], &out[i].reply)
		}()
	}
	require.Eventually(on.t, func() bool { return on.pendingWrites() == len(writes) }, 10*time.Second, 2*time.Millisecond)
	_, err := on.round(0, 10)
	require.NoError(on.t, err)
	wg.Wait()
	return out
}

// TestConditionalPutsCommitOnce: concurrent exclusive creates of one object
// through the API, group-committed by its owner: exactly one writes, every
// other caller gets PreconditionFailed with the winner's version; then two
// If-Match writes on that version: exactly one again.
func TestConditionalPutsCommitOnce(t *testing.T) {
	require := require.New(t)
	on := newObjectsNet(t, 64)
	const writers = 16
	absent := &api.Condition{Kind: api.IfAbsent}
	var writes []api.PutManifestArgs
	for i := range writers {
		w := on.object("contended", uint64(i))
		w.Condition = absent
		writes = append(writes, w)
	}
	results := on.putAll(writes)

	var winner *api.PutManifestReply
	txIDs := map[ids.ID]bool{}
	for i, r := range results {
		if r.err == nil {
			require.Nil(winner, "a second exclusive create succeeded (writer %d)", i)
			winner = &results[i].reply
			txIDs[ids.ID(r.reply.TxID)] = true
			continue
		}
		require.Equal(api.CodePreconditionFailed, r.err.Code, "writer %d: %s", i, r.err.Message)
		var d api.PreconditionData
		require.NoError(json.Unmarshal(r.err.Data, &d))
		require.Equal("precondition_failed", d.Reason)
		require.Equal(on.bucket, d.Bucket)
		txIDs[ids.ID(d.TxID)] = true
	}
	require.NotNil(winner, "one exclusive create succeeds")
	require.NotZero(winner.Version)
	require.Less(len(txIDs), writers, "the writes were group-committed")
	for _, r := range results {
		if r.err != nil {
			var d api.PreconditionData
			require.NoError(json.Unmarshal(r.err.Data, &d))
			require.Equal(winner.Version, d.Current, "a refused write learns the current version")
		}
	}
	for i := range on.vms {
		var m api.ManifestReply
		require.Nil(rpcCall(t, on.server(i), "getManifest", api.ManifestArgs{Bucket: on.bucket, Key: "contended"}, &m))
		require.Equal(winner.Version, m.Version, "node %d", i)
		require.Equal([]byte("attrs of contended"), m.Attributes)
	}

	// Two writers that both read the winner's version: one replaces it.
	var ifMatch []api.PutManifestArgs
	for _, id := range []uint64{40, 41} {
		w := on.object("contended", id)
		w.Condition = &api.Condition{Kind: api.IfVersion, Version: winner.Version}
		ifMatch = append(ifMatch, w)
	}
	results = on.putAll(ifMatch)
	ok := 0
	for _, r := range results {
		if r.err == nil {
			ok++
			require.Greater(r.reply.Version, winner.Version)
		} else {
			require.Equal(api.CodePreconditionFailed, r.err.Code)
		}
	}
	require.Equal(1, ok)
}

// TestChunksBoundAndReleasedThroughTheAPI: a manifest naming another live
// object's chunk is refused by name (Conflict), an overwrite puts the old
// chunks on the released list, reclaim takes them off.
func TestChunksBoundAndReleasedThroughTheAPI(t *testing.T) {
	require := require.New(t)
	on := newObjectsNet(t, 16)
	res := on.putAll([]api.PutManifestArgs{on.object("a", 1, 2)})
	require.Nil(res[0].err)
	res = on.putAll([]api.PutManifestArgs{on.object("b", 2)})
	require.NotNil(res[0].err)
	require.Equal(api.CodeConflict, res[0].err.Code)
	var d api.ConflictData
	require.NoError(json.Unmarshal(res[0].err.Data, &d))
	require.Equal("chunk_in_use", d.Reason)
	require.Contains(d.Detail, on.bucket+"/a")

	released := func() []uint64 {
		var rep api.ListReleasedReply
		require.Nil(rpcCall(t, on.server(1), "listReleased", api.ListReleasedArgs{Bucket: on.bucket}, &rep))
		var got []uint64
		for _, r := range rep.Released {
			got = append(got, r.ID)
		}
		return got
	}
	res = on.putAll([]api.PutManifestArgs{on.object("a", 2, 3)})
	require.Nil(res[0].err)
	require.Equal([]uint64{1}, released())

	var rc api.ReclaimReply
	require.Nil(rpcCall(t, on.url, "reclaim", api.ReclaimArgs{Chunks: []api.ChunkRef{{Range: on.bucket, ID: 1}}}, &rc))
	require.Eventually(func() bool { return on.vms[0].Mempool().Len() == 1 }, 10*time.Second, 2*time.Millisecond)
	_, err := on.round(0, 10)
	require.NoError(err)
	require.Empty(released())
}

// TestPutManifestThenGet: a write that asks for a key back answers it from
// the state that accepted the write: another object as it is, the written
// object itself with the write's version, none for an absent key; a key
// over the genesis limit is refused before anything is written.
func TestPutManifestThenGet(t *testing.T) {
	require := require.New(t)
	on := newObjectsNet(t, 16)
	dir := on.object("dir")
	require.Nil(on.putAll([]api.PutManifestArgs{dir})[0].err)

	w := on.object("dir/a", 1)
	w.ThenGet = "dir"
	res := on.putAll([]api.PutManifestArgs{w})
	require.Nil(res[0].err)
	then := res[0].reply.Then
	require.NotNil(then)
	require.Equal("dir", then.Key)
	require.NotNil(then.Manifest, "the directory is there")
	require.Equal([]byte("attrs of dir"), then.Manifest.Attributes)
	require.GreaterOrEqual(then.Manifest.AcceptedHeight, res[0].reply.Receipt.Height, "read at the write's height or later")

	w = on.object("dir/b", 2)
	w.ThenGet = "dir/b"
	res = on.putAll([]api.PutManifestArgs{w})
	require.Nil(res[0].err)
	require.NotNil(res[0].reply.Then.Manifest)
	require.Equal(res[0].reply.Version, res[0].reply.Then.Manifest.Version, "the read sees the write")

	w = on.object("dir/c", 3)
	w.ThenGet = "nothing-here"
	res = on.putAll([]api.PutManifestArgs{w})
	require.Nil(res[0].err)
	require.Equal(&api.ThenReply{Key: "nothing-here"}, res[0].reply.Then)

	w = on.object("dir/d", 4)
	res = on.putAll([]api.PutManifestArgs{w})
	require.Nil(res[0].err)
	require.Nil(res[0].reply.Then, "not asked")

	w = on.object("dir/e", 5)
	w.ThenGet = string(make([]byte, 4096))
	var rep api.PutManifestReply
	err := rpcCall(t, on.url, "putManifest", w, &rep)
	require.NotNil(err)
	require.Equal(api.CodeInvalidParams, err.Code, err.Message)
	require.Zero(on.pendingWrites(), "nothing written")
}

// TestListManifestsPages: directory-style listing through the API from any
// node, in bounded pages.
func TestListManifestsPages(t *testing.T) {
	require := require.New(t)
	on := newObjectsNet(t, 4)
	var writes []api.PutManifestArgs
	keys := []string{"dir/a", "dir/b", "dir/sub/c", "dir/sub/d", "top"}
	for _, k := range keys {
		writes = append(writes, on.object(k))
	}
	for _, r := range on.putAll(writes) {
		require.Nil(r.err)
	}
	del := on.object("dir/b")
	del.Deleted, del.Attributes, del.ContentHash = true, nil, api.ID{}
	require.Nil(on.putAll([]api.PutManifestArgs{del})[0].err)

	var rep api.ListManifestsReply
	require.Nil(rpcCall(t, on.server(2), "listManifests", api.ListManifestsArgs{Bucket: on.bucket, Prefix: "dir/", Delimiter: "/"}, &rep))
	require.Len(rep.Manifests, 1)
	require.Equal("dir/a", rep.Manifests[0].Manifest.Key)
	require.Equal([]string{"dir/sub/"}, rep.CommonPrefixes)
	require.False(rep.Truncated)

	var all []string
	args := api.ListManifestsArgs{Bucket: on.bucket, Limit: 2}
	for pages := 0; ; pages++ {
		require.Less(pages, 10)
		var p api.ListManifestsReply
		require.Nil(rpcCall(t, on.server(1), "listManifests", args, &p))
		require.LessOrEqual(len(p.Manifests), 2)
		for _, m := range p.Manifests {
			all = append(all, m.Manifest.Key)
		}
		if !p.Truncated {
			break
		}
		args.StartAfter = p.Next
	}
	require.Equal([]string{"dir/a", "dir/sub/c", "dir/sub/d", "top"}, all)

	e := rpcCall(t, on.url, "listManifests", api.ListManifestsArgs{Bucket: on.bucket, Limit: api.MaxListLimit + 1}, nil)
	require.NotNil(e)
	require.Equal(api.CodeInvalidParams, e.Code)
}

// TestManifestsBeforeTheUpgrade: a chain whose genesis does not schedule
// the upgrade keeps PutManifestTx; the new requests answer NotReady
// (not_activated).
func TestManifestsBeforeTheUpgrade(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, []byte(`{"timestamp": 1000, "mempool": {"maxTxs": 16, "maxBytes": 1048576}, "upgrades": {}}`))
	nw.ready(10)
	url := nw.server(0)
	bucket := nw.rangeOf(0, "old")
	cond := api.PutManifestArgs{Bucket: bucket, Key: "k", Condition: &api.Condition{Kind: api.IfAbsent}}
	for name, call := range map[string]func() *rpcErr{
		"condition": func() *rpcErr { return rpcCall(t, url, "putManifest", cond, nil) },
		"attributes": func() *rpcErr {
			return rpcCall(t, url, "putManifest", api.PutManifestArgs{Bucket: bucket, Key: "k", Attributes: []byte{1}}, nil)
		},
		"reclaim": func() *rpcErr {
			return rpcCall(t, url, "reclaim", api.ReclaimArgs{Chunks: []api.ChunkRef{{Range: bucket, ID: 1}}}, nil)
		},
	} {
		e := call()
		require.NotNil(e, name)
		require.Equal(api.CodeNotReady, e.Code, name)
		require.Contains(e.Message, "not activated", name)
	}
	fp := nw.vms[0].Chain().InForce().Fingerprint()
	versioned, err := nw.keys[0].Sign(&txs.ManifestTx{Header: nw.header(0, 10, fp, 99), Entries: []txs.ManifestEntry{{Manifest: txs.Manifest{Bucket: bucket, Key: "k"}}}})
	require.NoError(err)
	require.ErrorIs(nw.vms[1].Writer().Admit(versioned), execute.ErrNotActivated, "gossip cannot queue what no block may carry")

	var put api.PutManifestReply
	require.Nil(rpcCall(t, url, "putManifest", api.PutManifestArgs{Bucket: bucket, Key: "k"}, &put), "a plain manifest is still a PutManifestTx")
	tx, ok := nw.vms[0].Mempool().Get(ids.ID(put.TxID))
	require.True(ok)
	require.Equal("putManifest", tx.Kind())
	require.Zero(put.Version)
}

// TestPutManifestTxSupersededByTheUpgrade: after the upgrade, admission
// refuses a PutManifestTx (gossiped by a node that runs older rules).
func TestPutManifestTxSupersededByTheUpgrade(t *testing.T) {
	on := newObjectsNet(t, 1)
	fp := on.vms[0].Chain().InForce().Fingerprint()
	legacy, err := on.keys[0].Sign(&txs.PutManifestTx{Header: on.header(0, 10, fp, 99), Entries: []txs.Manifest{{Bucket: on.bucket, Key: "k"}}})
	require.NoError(t, err)
	require.ErrorIs(t, on.vms[1].Writer().Admit(legacy), execute.ErrSuperseded)
}

// TestGroupedWriteAnswersItsOwnEntry: writes group-committed into one
// transaction; one that asks for its own entry gets a receipt of that entry
// alone (First = its index), so a reply does not grow with the group; one
// that does not ask gets every entry, as before.
func TestGroupedWriteAnswersItsOwnEntry(t *testing.T) {
	require := require.New(t)
	on := newObjectsNetWith(t, 64, groupingGenesis)
	const writers = 8
	var writes []api.PutManifestArgs
	for i := range writers {
		w := on.object(fmt.Sprintf("k%d", i), uint64(i))
		w.OwnEntry = i%2 == 0
		writes = append(writes, w)
	}
	results := on.putAll(writes)
	txIDs := map[api.ID]bool{}
	for i, r := range results {
		require.Nil(r.err, "writer %d", i)
		txIDs[r.reply.TxID] = true
		rc := r.reply.Receipt
		require.NotNil(rc)
		e, ok := rc.Entry(r.reply.Index)
		require.True(ok, "writer %d: the receipt carries its entry %d", i, r.reply.Index)
		require.Equal(writes[i].Key, e.Key)
		require.Equal(r.reply.Version, e.Version)
		if writes[i].OwnEntry {
			require.Len(rc.Entries, 1, "writer %d asked for its own entry", i)
			require.Equal(r.reply.Index, rc.First)
		} else {
			require.Len(rc.Entries, writers, "writer %d asked for every entry", i)
			require.Zero(rc.First)
		}
	}
	require.Len(txIDs, 1, "the writes were group-committed into one transaction")
	// The waiters shared one decoded receipt; trimming their replies left
	// it whole.
	for id := range txIDs {
		var rc api.ReceiptReply
		require.Nil(rpcCall(t, on.url, "getReceipt", api.TxIDArgs{TxID: id}, &rc))
		require.Len(rc.Entries, writers)
		require.Zero(rc.First)
	}
}

// TestGroupedAllocationAnswersItsOwnEntry: the same for allocations.
func TestGroupedAllocationAnswersItsOwnEntry(t *testing.T) {
	require := require.New(t)
	on := newObjectsNetWith(t, 1, groupingGenesis)
	const callers = 6
	pending := func() int {
		n := 0
		for _, tx := range on.vms[0].Mempool().All() {
			if a, ok := tx.Unsigned.(*txs.AllocateTx); ok {
				n += len(a.Entries)
			}
		}
		return n
	}
	replies := make([]api.AllocateReply, callers)
	errs := make([]*rpcErr, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := api.AllocateArgs{Range: on.bucket, Count: uint64(i + 1), Wait: api.WaitAccepted, OwnEntry: i%2 == 0}
			errs[i] = rpcCall(t, on.url, "allocate", args, &replies[i])
		}()
	}
	require.Eventually(func() bool { return pending() == callers }, 10*time.Second, 2*time.Millisecond)
	_, err := on.round(0, 10)
	require.NoError(err)
	wg.Wait()
	txIDs := map[api.ID]bool{}
	for i, r := range replies {
		require.Nil(errs[i], "caller %d", i)
		txIDs[r.TxID] = true
		e, ok := r.Receipt.Entry(r.Index)
		require.True(ok, "caller %d", i)
		require.Equal(uint64(i+1), e.Count, "caller %d reads its own entry", i)
		if i%2 == 0 {
			require.Len(r.Receipt.Entries, 1)
			require.Equal(r.Index, r.Receipt.First)
		} else {
			require.Len(r.Receipt.Entries, callers)
		}
	}
	require.Len(txIDs, 1, "the allocations were group-committed into one transaction")
}
