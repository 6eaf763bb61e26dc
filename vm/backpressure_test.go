package vm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
)

// TestMempoolFullOverRPC: a full pool answers allocate with MempoolFull and
// a retry hint, and takes requests again once a block drains it.
func TestMempoolFullOverRPC(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNet(t, 2)
	nw.ready(10)
	mine := nw.rangeOf(0, "bp")
	for i := 0; i < 16; i++ { // the test genesis bounds the pool at 16 txs
		_, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 1}})
		require.NoError(err)
	}
	e := rpcCall(t, nw.server(0), "allocate", api.AllocateArgs{Range: mine, Count: 1}, nil)
	require.NotNil(e)
	require.Equal(api.CodeMempoolFull, e.Code)
	var retry api.RetryData
	require.NoError(json.Unmarshal(e.Data, &retry))
	require.Positive(retry.RetryAfterMs)

	_, err := nw.round(0, 10)
	require.NoError(err)
	var rep api.AllocateReply
	require.Nil(rpcCall(t, nw.server(0), "allocate", api.AllocateArgs{Range: mine, Count: 1}, &rep))
}
