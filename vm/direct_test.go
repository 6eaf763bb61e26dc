package vm_test

import (
	"context"
	"errors"
	stdnet "net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/rpc"
	"github.com/s-chain/schain/vm/vmtest"
)

// TestDirectAPI: with directAPI set, the plugin serves the same API on its
// own listener, announced by getNode: the same answers, the same tokens and
// body limit, pooled allocations from the same pool; the listener closes
// with the VM.
func TestDirectAPI(t *testing.T) {
	require := require.New(t)
	tok, a := tokenFor(t, "alpha")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a}
	cc.MaxRequestBytes = 64 << 10
	cc.DirectAPI = "127.0.0.1:0"
	an := newAuthNet(t, 3, cc)
	an.ready(10)
	mine := an.rangeOf(0, "direct")

	var viaNode api.NodeReply
	e, _ := authCall(t, an.url(0), "", "getNode", api.Empty{}, &viaNode)
	require.Nil(e)
	require.True(strings.HasPrefix(viaNode.DirectURI, "http://127.0.0.1:"), viaNode.DirectURI)
	require.NotEqual("http://127.0.0.1:0", viaNode.DirectURI, "the port the listener got, not the one asked for")
	direct := viaNode.DirectURI + "/ext/bc/" + chainID.String()
	var viaDirect api.NodeReply
	e, _ = authCall(t, direct, "", "getNode", api.Empty{}, &viaDirect)
	require.Nil(e)
	require.Equal(viaNode, viaDirect)

	// The same gate: no token, no write; a body over the limit is refused
	// before it is read.
	e, _ = authCall(t, direct, "", "allocate", api.AllocateArgs{Range: mine, Count: 1, Pooled: true}, nil)
	require.NotNil(e)
	require.Equal(api.CodeUnauthorized, e.Code)
	big := []byte(`{"jsonrpc":"2.0","id":1,"method":"schain.getNode","params":{"pad":"` + strings.Repeat("x", 64<<10) + `"}}`)
	e, status := authRaw(t, direct, big, nil, nil)
	require.Equal(http.StatusRequestEntityTooLarge, status)
	require.Equal(api.CodeRequestTooLarge, e.Code)

	// Pooled allocations through either door come from one pool, never
	// overlapping (the first request commits the pool's reservation).
	an.pooled(0, mine, 1, 1)
	var first, second api.AllocateReply
	e, _ = authCall(t, an.url(0), bearerOf(tok), "allocate", api.AllocateArgs{Range: mine, Count: 3, Pooled: true}, &first)
	require.Nil(e)
	e, _ = authCall(t, direct, bearerOf(tok), "allocate", api.AllocateArgs{Range: mine, Count: 3, Pooled: true}, &second)
	require.Nil(e)
	require.True(first.Pooled && second.Pooled)
	require.Equal(first.Base+3, second.Base, "the next ids of the same pool")

	// Another path on the direct listener is not the API.
	resp, err := http.Post(viaNode.DirectURI+"/ext/bc/other", "application/json", strings.NewReader(`{}`))
	require.NoError(err)
	require.NoError(resp.Body.Close())
	require.Equal(http.StatusNotFound, resp.StatusCode)

	// Shutdown closes the listener.
	require.NoError(an.vms[0].Shutdown(context.Background()))
	_, err = http.Post(direct, "application/json", strings.NewReader(`{}`))
	require.ErrorIs(err, syscall.ECONNREFUSED)
}

// TestDirectAPIAddressInUse: a directAPI address that cannot be listened on
// fails the chain's start with a named error, and leaves nothing running.
func TestDirectAPIAddressInUse(t *testing.T) {
	ln, err := stdnet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	cc := config.DefaultChainConfig()
	cc.DirectAPI = ln.Addr().String()
	keys, err := newKeys(t, 1)
	require.NoError(t, err)
	v := &vm.VM{}
	err = v.Init(vm.Config{
		NetworkID: 5, ChainID: chainID, SubnetID: subnetID, NodeID: keys[0].NodeID,
		Signer: keys[0].Signer(5, chainID), Validators: vmtest.ValidatorSets{},
		Clock: func() time.Time { return time.UnixMilli(5000) }, Log: logging.NoLog{},
		Registerer: prometheus.NewRegistry(), ChainConfig: &cc,
	}, memdb.New(), genesis)
	require.ErrorIs(t, err, rpc.ErrDirectAPI)
	require.True(t, errors.Is(err, syscall.EADDRINUSE), err)
	require.NoError(t, v.Shutdown(context.Background()), "a second shutdown finds nothing to do")
}
