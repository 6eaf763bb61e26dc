package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/snowtest"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/rpc"
)

func TestWriteAuthorization(t *testing.T) {
	require := require.New(t)
	tokA, a := tokenFor(t, "alpha")
	tokB, b := tokenFor(t, "beta")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a, b}
	an := newAuthNet(t, 3, cc)
	an.ready(10)
	mine := an.rangeOf(0, "auth")
	url := an.url(0)
	alloc := api.AllocateArgs{Range: mine, Count: 1}

	// Reads stay open.
	var node api.NodeReply
	e, _ := authCall(t, url, "", "getNode", api.Empty{}, &node)
	require.Nil(e)
	e, _ = authCall(t, url, "", "getOwner", api.RangeArgs{Range: mine}, nil)
	require.Nil(e)

	// Writes without a valid token are refused before anything is signed,
	// and before their arguments are looked at.
	for name, auth := range map[string]string{
		"missing":         "",
		"wrong token":     bearerOf("schain_not-a-token"),
		"hash as token":   bearerOf(a.SHA256),
		"other scheme":    "Basic " + tokA,
		"no scheme":       tokA,
		"empty bearer":    "Bearer ",
		"token with junk": bearerOf(tokA + "x"),
	} {
		want := api.ReasonInvalid
		if auth == "" {
			want = api.ReasonMissing
		}
		e, status := authCall(t, url, auth, "allocate", alloc, nil)
		require.NotNil(e, name)
		require.Equal(api.CodeUnauthorized, e.Code, name)
		require.Equal(want, unauthorizedReason(t, e), name)
		require.Equal(http.StatusOK, status, name)
		e, _ = authCall(t, url, auth, "putManifest", api.PutManifestArgs{Bucket: mine, Key: "k", Deleted: true}, nil)
		require.NotNil(e, name)
		require.Equal(api.CodeUnauthorized, e.Code, name)
		e, _ = authCall(t, url, auth, "allocate", api.AllocateArgs{Range: "", Count: 0}, nil)
		require.Equal(api.CodeUnauthorized, e.Code, "%s: unauthorized before invalid params", name)
		e, _ = authCall(t, url, auth, "allocateBatch", api.AllocateBatchArgs{Requests: []api.AllocateArgs{alloc}}, nil)
		require.NotNil(e, name)
		require.Equal(api.CodeUnauthorized, e.Code, "%s: a batch needs the token too", name)
		e, _ = authCall(t, url, auth, "waitReceipt", api.WaitReceiptArgs{TxID: ids.GenerateTestID()}, nil)
		require.NotNil(e, name)
		require.Equal(api.CodeUnauthorized, e.Code, "%s: a wait holds a request open: it needs the token too", name)
	}
	e, _ = authRaw(t, url, mustJSON(t, "allocate", alloc), func(h http.Header) {
		h.Add("Authorization", bearerOf(tokA))
		h.Add("Authorization", bearerOf(tokB))
	}, nil)
	require.Equal(api.ReasonInvalid, unauthorizedReason(t, e), "two Authorization headers")
	require.Zero(an.vms[0].Mempool().Len(), "nothing was signed")

	// The right tokens are accepted; the scheme is case-insensitive.
	var r1, r2 api.AllocateReply
	e, _ = authCall(t, url, bearerOf(tokA), "allocate", alloc, &r1)
	require.Nil(e)
	e, _ = authCall(t, url, "bearer "+tokB, "allocate", alloc, &r2)
	require.Nil(e)
	require.Equal(an.keys[0].NodeID, r1.Owner)

	// Metrics and logs name the reason and the token's name, never a token.
	require.Positive(an.rejects(0, api.ReasonMissing, "none"))
	require.Positive(an.rejects(0, api.ReasonInvalid, "none"))
	logs := an.logs.String()
	require.Contains(logs, "api request refused")
	require.Contains(logs, `"writeTokens": ["alpha", "beta"]`)
	for _, secret := range []string{tokA, tokB, tokA[len("schain_"):]} {
		require.NotContains(logs, secret)
	}

	// Revocation: node 0 restarts with alpha removed from its chain config.
	revoked := config.DefaultChainConfig()
	revoked.WriteTokens = []config.WriteToken{b}
	require.NoError(an.vms[0].Shutdown(context.Background()))
	an.vms[0] = an.startWith(0, revoked)
	url = an.url(0)
	e, _ = authCall(t, url, bearerOf(tokA), "allocate", alloc, nil)
	require.NotNil(e)
	require.Equal(api.CodeUnauthorized, e.Code, "revoked token")
	require.Equal(api.ReasonInvalid, unauthorizedReason(t, e))
	e, _ = authCall(t, url, bearerOf(tokB), "allocate", alloc, nil)
	require.Nil(e, "the remaining token still writes")

	// A node whose chain config lists no token has its writes disabled.
	require.NoError(an.vms[0].Shutdown(context.Background()))
	an.vms[0] = an.startWith(0, config.DefaultChainConfig())
	url = an.url(0)
	for _, auth := range []string{"", bearerOf(tokA), bearerOf(tokB)} {
		e, _ = authCall(t, url, auth, "allocate", alloc, nil)
		require.NotNil(e)
		require.Equal(api.CodeUnauthorized, e.Code)
		require.Equal(api.ReasonNoTokenConfigured, unauthorizedReason(t, e))
		require.Contains(e.Message, "no writeTokens")
	}
	e, _ = authCall(t, url, "", "getNode", api.Empty{}, nil)
	require.Nil(e, "reads stay open")
	require.Positive(an.rejects(0, api.ReasonNoTokenConfigured, "none"))
}

// TestEveryNonReadMethodNeedsAToken walks the service's methods: anything
// that is not a get* or list* read must refuse a caller without a token, so a new
// method that makes the node sign cannot be exposed by accident.
func TestEveryNonReadMethodNeedsAToken(t *testing.T) {
	_, a := tokenFor(t, "alpha")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a}
	an := newAuthNet(t, 2, cc)
	url := an.url(0)
	st := reflect.TypeOf(&rpc.Service{})
	writes := 0
	for i := 0; i < st.NumMethod(); i++ {
		name := st.Method(i).Name
		method := strings.ToLower(name[:1]) + name[1:]
		e, _ := authCall(t, url, "", method, map[string]any{}, nil)
		if strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "List") {
			if e != nil {
				require.NotEqual(t, api.CodeUnauthorized, e.Code, "read %s must stay open", method)
			}
			continue
		}
		writes++
		require.NotNil(t, e, method)
		require.Equal(t, api.CodeUnauthorized, e.Code, "%s makes the node sign: it needs a token", method)
	}
	require.GreaterOrEqual(t, writes, 2, "allocate and putManifest at least")
}

// TestTokenCompareIsConstantTime checks the source of the token matcher: it
// must compare with crypto/subtle, on hashes, and visit every configured
// token whatever matched.
func TestTokenCompareIsConstantTime(t *testing.T) {
	require := require.New(t)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "rpc/access.go", nil, 0)
	require.NoError(err)
	var match *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "matchToken" {
			match = fd
		}
	}
	require.NotNil(match, "access.go defines matchToken")
	calls := map[string]int{}
	ast.Inspect(match.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok {
					calls[x.Name+"."+sel.Sel.Name]++
				}
			}
		case *ast.RangeStmt:
			ast.Inspect(n.Body, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.BranchStmt:
					require.Failf("early exit", "matchToken leaves its loop with %s: timing would depend on the match", m.Tok)
				case *ast.ReturnStmt:
					require.Fail("matchToken returns from inside its loop: timing would depend on the match")
				case *ast.BinaryExpr:
					if m.Op == token.EQL || m.Op == token.NEQ {
						call, ok := m.X.(*ast.CallExpr)
						sel, _ := call.Fun.(*ast.SelectorExpr)
						require.True(ok && sel != nil && sel.Sel.Name == "ConstantTimeCompare", "matchToken compares with == outside subtle.ConstantTimeCompare")
					}
				}
				return true
			})
		}
		return true
	})
	require.Equal(1, calls["subtle.ConstantTimeCompare"], "compares with crypto/subtle")
	require.Equal(1, calls["sha256.Sum256"], "compares hashes, not the presented token")
	for c := range calls {
		require.NotContains([]string{"bytes.Equal", "strings.EqualFold", "reflect.DeepEqual", "hmac.Equal"}, c)
	}
	// And the gate uses it for every token check.
	src := readFile(t, "rpc/access.go")
	require.Equal(1, strings.Count(src, "matchToken(g.tokens"), "authenticate goes through matchToken")
	require.NotContains(src, "bytes.Equal")
}

func TestInitializeReadsTheChainConfig(t *testing.T) {
	err := (&vm.VM{}).Initialize(context.Background(), &snow.Context{}, nil, nil, nil, []byte(`{"writeToken": []}`), nil, nil)
	require.ErrorIs(t, err, config.ErrBadChainConfig)
	require.Contains(t, err.Error(), `unknown field "writeToken"`)
}

func TestLimits(t *testing.T) {
	require := require.New(t)
	tok, a := tokenFor(t, "alpha")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a}
	cc.MaxRequestBytes = 64 << 10
	an := newAuthNet(t, 3, cc)
	an.ready(10)
	mine := an.rangeOf(0, "lim")
	url, auth := an.url(0), bearerOf(tok)
	limits := txs.DefaultLimits()

	// Body size: refused with 413 and a named error, with or without a
	// Content-Length, before it is decoded or authorized.
	big := []byte(`{"jsonrpc":"2.0","id":1,"method":"schain.getNode","params":{"pad":"` + strings.Repeat("x", 64<<10) + `"}}`)
	e, status := authRaw(t, url, big, nil, nil)
	require.Equal(http.StatusRequestEntityTooLarge, status)
	require.Equal(api.CodeRequestTooLarge, e.Code)
	require.Contains(e.Message, "maxRequestBytes (65536 bytes)")
	var ld api.LimitData
	require.NoError(json.Unmarshal(e.Data, &ld))
	require.Equal(api.LimitData{Limit: "maxRequestBytes", Max: 65536}, ld)
	e, status = chunkedPost(t, url, big, auth)
	require.Equal(http.StatusRequestEntityTooLarge, status)
	require.Equal(api.CodeRequestTooLarge, e.Code)
	require.Equal(float64(1), an.rejects(0, "body_too_large", "none"))
	require.Equal(float64(1), an.rejects(0, "body_too_large", "alpha"), "labelled by the token's name")

	// Per-request content: entries (manifest chunks), range, bucket and key
	// lengths, counts.
	tooMany := api.PutManifestArgs{Bucket: mine, Key: "k", ContentHash: ids.ID{1}}
	for i := 0; i <= limits.MaxChunks; i++ {
		tooMany.Chunks = append(tooMany.Chunks, txs.Chunk{Range: mine, ID: uint64(i), Size: 1})
		tooMany.Size++
	}
	for name, c := range map[string]struct {
		method string
		params any
		want   string
	}{
		"too many chunks": {"putManifest", tooMany, "too many chunks"},
		"long range":      {"allocate", api.AllocateArgs{Range: strings.Repeat("r", limits.MaxRangeLen+1), Count: 1}, "must be 1..128"},
		"long bucket":     {"putManifest", api.PutManifestArgs{Bucket: strings.Repeat("b", limits.MaxRangeLen+1), Key: "k", Deleted: true}, "must be 1..128"},
		"long key":        {"putManifest", api.PutManifestArgs{Bucket: mine, Key: strings.Repeat("k", limits.MaxKeyLen+1), Deleted: true}, "must be 1..1024"},
		"zero count":      {"allocate", api.AllocateArgs{Range: mine}, "count 0 not in [1, 1048576]"},
		"huge count":      {"allocate", api.AllocateArgs{Range: mine, Count: limits.MaxCount + 1}, "not in [1, 1048576]"},
		"floor overflow":  {"allocate", api.AllocateArgs{Range: mine, Count: 2, Floor: ^uint64(0) - 1}, "overflows 64 bits"},
		"negative count":  {"allocate", map[string]any{"range": mine, "count": -1}, ""},
		"count too big":   {"allocate", map[string]any{"range": mine, "count": 1e30}, ""},
	} {
		e, _ := authCall(t, url, auth, c.method, c.params, nil)
		require.NotNil(e, name)
		require.Equal(api.CodeInvalidParams, e.Code, name)
		require.Contains(e.Message, c.want, name)
	}
	require.Zero(an.vms[0].Mempool().Len(), "nothing out of limits was signed")
	require.Positive(an.rejects(0, "invalid_params", "alpha"))
}

func TestBoundedWait(t *testing.T) {
	require := require.New(t)
	tok, a := tokenFor(t, "alpha")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a}
	cc.MaxWaitMs = 300
	an := newAuthNet(t, 3, cc)
	an.ready(10)
	mine := an.rangeOf(0, "wait")
	url, auth := an.url(0), bearerOf(tok)

	// Nobody builds a block: the wait ends at the chain config's bound, or at
	// the request's own when smaller, naming the transaction to poll.
	for _, c := range []struct {
		waitMs uint64
		bound  time.Duration
	}{{0, 300 * time.Millisecond}, {60_000, 300 * time.Millisecond}, {50, 50 * time.Millisecond}} {
		began := time.Now()
		e, _ := authCall(t, url, auth, "allocate", api.AllocateArgs{Range: mine, Count: 1, Wait: api.WaitAccepted, WaitMs: c.waitMs}, nil)
		took := time.Since(began)
		require.NotNil(e)
		require.Equal(api.CodeTimeout, e.Code)
		require.GreaterOrEqual(took, c.bound)
		require.Less(took, c.bound+5*time.Second)
		var d api.TimeoutData
		require.NoError(json.Unmarshal(e.Data, &d))
		require.Equal(uint64(c.bound/time.Millisecond), d.WaitMs)
		require.True(an.vms[0].Mempool().Has(d.TxID), "the timeout names the pending transaction")
	}
}

// TestFloodDoesNotStarveOtherTokens: token A fills its pending limit with
// waiting writes and floods more; A's excess is refused with a retry hint
// while B's writes go through, and A writes again once its calls return.
func TestFloodDoesNotStarveOtherTokens(t *testing.T) {
	require := require.New(t)
	tokA, tokB, cc := twoTokens(t, 4)
	an := newAuthNet(t, 3, cc)
	an.ready(10)
	mine := an.rangeOf(0, "flood")
	url := an.url(0)

	// A's four waiting calls hold its slots until a block is accepted.
	var wg sync.WaitGroup
	held := make(chan *rpcErr, cc.MaxPendingPerToken)
	for i := 0; i < cc.MaxPendingPerToken; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, _ := authCall(t, url, bearerOf(tokA), "allocate", api.AllocateArgs{Range: mine, Count: 1, Wait: api.WaitAccepted}, nil)
			held <- e
		}()
	}
	require.Eventually(func() bool { return pending(an, 0) == cc.MaxPendingPerToken }, 10*time.Second, 5*time.Millisecond)

	// A's flood is refused without touching the node's signer.
	const flood = 40
	var tooMany sync.WaitGroup
	refused := make(chan *rpcErr, flood)
	for i := 0; i < flood; i++ {
		tooMany.Add(1)
		go func() {
			defer tooMany.Done()
			e, _ := authCall(t, url, bearerOf(tokA), "allocate", api.AllocateArgs{Range: mine, Count: 1}, nil)
			refused <- e
		}()
	}
	tooMany.Wait()
	close(refused)
	for e := range refused {
		require.NotNil(e)
		require.Equal(api.CodeTooManyRequests, e.Code)
		require.Contains(e.Message, `token "alpha"`)
		var d api.RetryData
		require.NoError(json.Unmarshal(e.Data, &d))
		require.Positive(d.RetryAfterMs)
	}
	require.Equal(float64(flood), an.rejects(0, "too_many_requests", "alpha"))

	// B is not starved.
	var got []api.AllocateReply
	for i := 0; i < 3; i++ {
		var r api.AllocateReply
		e, _ := authCall(t, url, bearerOf(tokB), "allocate", api.AllocateArgs{Range: mine, Count: 1}, &r)
		require.Nil(e, "beta writes while alpha is saturated")
		got = append(got, r)
	}
	require.Zero(an.rejects(0, "too_many_requests", "beta"))

	// A block accepts everything; A's waits return and free its slots.
	_, err := an.round(0, 10)
	require.NoError(err)
	wg.Wait()
	close(held)
	for e := range held {
		require.Nil(e)
	}
	require.Equal(0, pending(an, 0))
	e, _ := authCall(t, url, bearerOf(tokA), "allocate", api.AllocateArgs{Range: mine, Count: 1}, nil)
	require.Nil(e, "alpha writes again once its calls returned")
	for _, r := range got {
		rc, err := an.vms[0].Writer().Receipt(r.TxID)
		require.NoError(err)
		require.Equal(api.StatusAccepted, rc.Status)
	}
}

// pending reads api_pending{token="alpha"} of VM i (-1: no such series).
func pending(an *authNet, i int) int {
	v, ok := series(an.t, an.regs[i], "api_pending", map[string]string{"token": "alpha"})
	if !ok {
		return -1
	}
	return int(v)
}

func mustJSON(t *testing.T, method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "schain." + method, "params": params})
	require.NoError(t, err)
	return b
}

func TestChainConfigBadAuthHeaderNeverLogged(t *testing.T) {
	_, a := tokenFor(t, "alpha")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a}
	an := newAuthNet(t, 2, cc)
	secret := fmt.Sprintf("schain_guess-%d", time.Now().UnixNano())
	e, _ := authCall(t, an.url(0), bearerOf(secret), "allocate", api.AllocateArgs{Range: "r", Count: 1}, nil)
	require.Equal(t, api.CodeUnauthorized, e.Code)
	require.NotContains(t, e.Message, secret)
	require.NotContains(t, an.logs.String(), secret)
	require.Contains(t, an.logs.String(), "api request refused")
}

// TestInitializeWritesPluginProfiles: a chain config with cpuProfileDir
// makes the VM profile its own process (the plugin's, which the node's
// profiler does not see) until Shutdown, which completes the profile.
func TestInitializeWritesPluginProfiles(t *testing.T) {
	require := require.New(t)
	dir := filepath.Join(t.TempDir(), "profiles")
	chainCtx := snowtest.Context(t, snowtest.CChainID)
	v := &vm.VM{}
	require.NoError(v.Initialize(context.Background(), chainCtx, memdb.New(), genesis, nil,
		[]byte(`{"cpuProfileDir": "`+dir+`", "cpuProfileMaxFiles": 3}`), nil, nil))
	require.NoError(v.Shutdown(context.Background()))
	require.FileExists(filepath.Join(dir, chainCtx.NodeID.String()+".0.pprof"))
}
