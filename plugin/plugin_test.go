package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ava-labs/avalanchego/api/metrics"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/snow/snowtest"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/snow/validators/validatorstest"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/version"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/rpcchainvm"
	"github.com/ava-labs/avalanchego/vms/rpcchainvm/grpcutils"
	"github.com/ava-labs/avalanchego/vms/rpcchainvm/runtime"
	"github.com/ava-labs/avalanchego/vms/rpcchainvm/runtime/subprocess"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/config"
)

// TestMain doubles as the plugin process: with SCHAIN_PLUGIN_SERVE=1 the
// test binary serves the VM over rpcchainvm exactly as the plugin does.
func TestMain(m *testing.M) {
	if os.Getenv("SCHAIN_PLUGIN_SERVE") == "1" {
		if err := rpcchainvm.Serve(context.Background(), &vm.VM{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestVersionJSON(t *testing.T) {
	require := require.New(t)
	bin := filepath.Join(t.TempDir(), "plugin")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(err, string(out))
	out, err = exec.Command(bin, "version-json").Output()
	require.NoError(err)
	var info versionInfo
	require.NoError(json.Unmarshal(out, &info))
	require.Equal(version.RPCChainVMProtocol, info.RPCChainVM)
	require.Equal(vm.ID.String(), info.VMID)
	require.NotEmpty(info.Version)
	cmd := exec.Command(bin, "bogus")
	require.Error(cmd.Run())
	require.Equal(2, cmd.ProcessState.ExitCode())
}

// TestOverRPCChainVM runs the VM in a subprocess behind rpcchainvm, as a node
// does, and drives allocate → build → verify → accept → getReceipt.
func TestOverRPCChainVM(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()

	listener, err := grpcutils.NewListener()
	require.NoError(err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SCHAIN_PLUGIN_SERVE=1")
	status, stopper, err := subprocess.Bootstrap(ctx, listener, cmd, &subprocess.Config{
		Stderr: logging.NoLog{}, Stdout: io.Discard, Log: logging.NoLog{},
		HandshakeTimeout: runtime.DefaultHandshakeTimeout,
	})
	require.NoError(err)
	t.Cleanup(func() { stopper.Stop(context.Background()) })
	conn, err := grpcutils.Dial(status.Addr)
	require.NoError(err)
	client := rpcchainvm.NewClient(conn, stopper, status.Pid, noTracker{}, metrics.NewPrefixGatherer(), logging.NoLog{})

	keys, err := txstest.NewKeys(t.Name(), 1)
	require.NoError(err)
	chainID := ids.ID{'p', 'l', 'u', 'g'}
	snowCtx := snowtest.Context(t, chainID)
	snowCtx.NodeID = keys[0].NodeID
	snowCtx.WarpSigner = warp.NewSigner(keys[0].Secret, snowCtx.NetworkID, chainID)
	snowCtx.ValidatorState = &validatorstest.State{
		GetValidatorSetF: func(context.Context, uint64, ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
			return map[ids.NodeID]*validators.GetValidatorOutput{
				keys[0].NodeID: {NodeID: keys[0].NodeID, Weight: 1, PublicKey: keys[0].PublicKey()},
			}, nil
		},
	}
	// The chain config reaches the plugin: one write token.
	const token = "schain_plugin-test-token"
	chainConfig := []byte(`{"writeTokens":[{"name":"plugin-test","sha256":"` + config.TokenHash(token) + `"}]}`)
	require.NoError(client.Initialize(ctx, snowCtx, memdb.New(), []byte(`{}`), nil, chainConfig, nil, noSender{}))
	t.Cleanup(func() { _ = client.Shutdown(context.Background()) })

	handlers, err := client.CreateHandlers(ctx)
	require.NoError(err)
	srv := httptest.NewServer(handlers[""])
	t.Cleanup(srv.Close)
	// While the node bootstraps the chain, reads are NotReady (accepted state
	// may be old); avalanchego says when it is done, across the plugin
	// boundary.
	require.NoError(client.SetState(ctx, snow.Bootstrapping))
	require.Equal(api.CodeNotReady, callErr(t, srv.URL, "getAllocation", api.RangeArgs{Range: "photos"}))
	var node api.NodeReply
	call(t, srv.URL, "getNode", api.Empty{}, &node)
	require.Equal("bootstrapping", node.NotReady)
	require.NoError(client.SetState(ctx, snow.NormalOp))
	node = api.NodeReply{}
	call(t, srv.URL, "getNode", api.Empty{}, &node)
	require.Empty(node.NotReady)

	// A request before the first membership is NotReady and makes the chain
	// open it: one block without a context, one that opens the membership
	// of P-chain height 7.
	require.Equal(api.CodeNotReady, callErr(t, srv.URL, "getMembership", api.Empty{}))
	msg, err := client.WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)
	b1, err := client.BuildBlock(ctx)
	require.NoError(err)
	require.NoError(b1.Verify(ctx))
	require.NoError(b1.Accept(ctx))
	require.NoError(client.SetPreference(ctx, b1.ID()))
	bctx := &snowblock.Context{PChainHeight: 7}
	b2, err := client.BuildBlockWithContext(ctx, bctx)
	require.NoError(err)
	require.NoError(b2.(snowblock.WithVerifyContext).VerifyWithContext(ctx, bctx))
	require.NoError(b2.Accept(ctx))
	require.NoError(client.SetPreference(ctx, b2.ID()))

	// Writes need the token, which crosses the plugin boundary as a header.
	require.Equal(api.CodeUnauthorized, callErr(t, srv.URL, "allocate", api.AllocateArgs{Range: "photos", Count: 3}))
	var alloc api.AllocateReply
	callWith(t, srv.URL, token, "allocate", api.AllocateArgs{Range: "photos", Count: 3}, &alloc)
	require.Equal(api.NodeID(keys[0].NodeID), alloc.Owner)
	require.Equal(uint64(7), alloc.PChainHeight)

	msg, err = client.WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)
	b3, err := client.BuildBlockWithContext(ctx, bctx)
	require.NoError(err)
	parsed, err := client.ParseBlock(ctx, b3.Bytes())
	require.NoError(err)
	require.Equal(b3.ID(), parsed.ID())
	require.NoError(parsed.(snowblock.WithVerifyContext).VerifyWithContext(ctx, bctx))
	require.NoError(parsed.Accept(ctx))

	var rc api.ReceiptReply
	call(t, srv.URL, "getReceipt", api.TxIDArgs{TxID: alloc.TxID}, &rc)
	require.Equal(api.StatusAccepted, rc.Status)
	require.Equal(uint64(3), rc.Entries[0].Count)
	last, err := client.LastAccepted(ctx)
	require.NoError(err)
	require.Equal(b3.ID(), last)
}

// noSender stands in for the node's network: this node has no peers.
type noSender struct{}

func (noSender) SendAppRequest(context.Context, set.Set[ids.NodeID], uint32, []byte) error {
	return nil
}
func (noSender) SendAppResponse(context.Context, ids.NodeID, uint32, []byte) error     { return nil }
func (noSender) SendAppError(context.Context, ids.NodeID, uint32, int32, string) error { return nil }
func (noSender) SendAppGossip(context.Context, common.SendConfig, []byte) error        { return nil }

// noTracker stands in for the node's process tracker.
type noTracker struct{}

func (noTracker) TrackProcess(int)   {}
func (noTracker) UntrackProcess(int) {}

// callErr performs a call that must fail and returns its error code.
func callErr(t *testing.T, url, method string, params any) int {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "schain." + method, "params": params})
	require.NoError(t, err)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotNil(t, out.Error)
	return out.Error.Code
}

func call(t *testing.T, url, method string, params, result any) {
	callWith(t, url, "", method, params, result)
}

// callWith is call with a write token ("" for none).
func callWith(t *testing.T, url, token, method string, params, result any) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "schain." + method, "params": params})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Empty(t, out.Error)
	require.NoError(t, json.Unmarshal(out.Result, result))
}
