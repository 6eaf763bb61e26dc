package vm_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm"
)

// startOn starts vm i on db instead of its memdb.
func (nw *net) startOn(i int, db database.Database) *vm.VM {
	v := &vm.VM{}
	require.NoError(nw.t, v.Init(vm.Config{
		NetworkID: 5, ChainID: chainID, SubnetID: subnetID, NodeID: nw.keys[i].NodeID,
		Signer: nw.keys[i].Signer(5, chainID), Validators: netSource{nw},
		Clock: func() time.Time { return time.UnixMilli(nw.now.Load() + nw.ahead[i].Load()) },
	}, db, nw.genesis))
	nw.t.Cleanup(func() { require.NoError(nw.t, v.Shutdown(context.Background())) })
	return v
}

// readCounter counts the reads that reach a VM's database: in a plugin,
// each is a gRPC round trip into the node.
type readCounter struct {
	database.Database
	reads atomic.Int64
}

func (r *readCounter) Get(key []byte) ([]byte, error) {
	r.reads.Add(1)
	return r.Database.Get(key)
}

func (r *readCounter) Has(key []byte) (bool, error) {
	r.reads.Add(1)
	return r.Database.Has(key)
}

// TestParseNewBlockReadsNothing: a block the engine hears of for the first
// time (above the last accepted height) is parsed without a database read,
// while an older block still is looked up (it may be accepted).
func TestParseNewBlockReadsNothing(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 2)
	nw.ready(10)
	ctx := context.Background()
	last, err := nw.vms[0].LastAccepted(ctx)
	require.NoError(err)
	older, err := nw.vms[0].GetBlock(ctx, last)
	require.NoError(err)
	nw.allocate(0, nw.rangeOf(0, "parse"), 1, 1)
	accepted := nw.buildOn(0, older)
	acceptAll(t, nw.deliver(accepted, 10))

	// vm 1 restarts on a database that counts reads (its cache is empty).
	counter := &readCounter{Database: nw.dbs[1]}
	nw.vms[1] = nw.startOn(1, counter)

	nw.allocate(0, nw.rangeOf(0, "parse2"), 1, 1)
	fresh := nw.buildOn(0, accepted)
	before := counter.reads.Load()
	_, err = nw.vms[1].ParseBlock(ctx, fresh.Bytes())
	require.NoError(err)
	require.Equal(before, counter.reads.Load(), "no read for a block above the last accepted height")

	_, err = nw.vms[1].ParseBlock(ctx, older.Bytes())
	require.NoError(err)
	require.Greater(counter.reads.Load(), before, "an older block is looked up: it may be accepted")
}
