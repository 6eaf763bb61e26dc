package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/internal/buffer"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/config"
)

// authNet is a net whose VMs run with a chain config, their own metrics
// registries and a captured log.
type authNet struct {
	*net
	cc   config.ChainConfig
	regs []*prometheus.Registry
	logs *buffer.Buffer
	urls map[*vm.VM]string
}

// newAuthNet starts n VMs sharing the chain config cc.
func newAuthNet(t *testing.T, n int, cc config.ChainConfig) *authNet {
	keys, err := newKeys(t, n)
	require.NoError(t, err)
	all := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, k := range keys {
		all[k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, Weight: 10, PublicKey: k.PublicKey()}
	}
	an := &authNet{
		net:  &net{t: t, keys: keys, sets: validatorSets{10: all, 20: all}},
		cc:   cc,
		logs: &buffer.Buffer{},
		urls: map[*vm.VM]string{},
	}
	for i := range keys {
		an.dbs = append(an.dbs, memdb.New())
		an.regs = append(an.regs, nil)
		an.vms = append(an.vms, an.startWith(i, cc))
	}
	return an
}

// startWith (re)starts VM i on its database with chain config cc.
func (an *authNet) startWith(i int, cc config.ChainConfig) *vm.VM {
	an.regs[i] = prometheus.NewRegistry()
	v := &vm.VM{}
	require.NoError(an.t, v.Init(vm.Config{
		NetworkID: 5, ChainID: chainID, SubnetID: subnetID, NodeID: an.keys[i].NodeID,
		Signer: an.keys[i].Signer(5, chainID), Validators: an.sets,
		Clock:       func() time.Time { return time.UnixMilli(5000) },
		Log:         logging.NewLogger("", logging.NewWrappedCore(logging.Debug, an.logs, logging.Plain.ConsoleEncoder())),
		Registerer:  an.regs[i],
		ChainConfig: &cc,
	}, an.dbs[i], genesis))
	an.t.Cleanup(func() { require.NoError(an.t, v.Shutdown(context.Background())) })
	return v
}

// url serves VM i's handler on 127.0.0.1.
func (an *authNet) url(i int) string {
	v := an.vms[i]
	if u, ok := an.urls[v]; ok {
		return u
	}
	h, err := v.Handler()
	require.NoError(an.t, err)
	srv := httptest.NewServer(h)
	an.t.Cleanup(srv.Close)
	an.urls[v] = srv.URL
	return srv.URL
}

// rejects reads api_rejects_total{reason, token} of VM i.
func (an *authNet) rejects(i int, reason, token string) float64 {
	v, _ := series(an.t, an.regs[i], "api_rejects_total", map[string]string{"reason": reason, "token": token})
	return v
}

// tokenFor returns a fresh token and its chain config entry.
func tokenFor(t *testing.T, name string) (string, config.WriteToken) {
	tok, err := config.GenerateToken()
	require.NoError(t, err)
	wt, err := config.NewWriteToken(name, tok, nil, nil)
	require.NoError(t, err)
	return tok, wt
}

// twoTokens returns tokens "alpha" and "beta" and a chain config that
// accepts both, with at most maxPending waiting calls per token.
func twoTokens(t *testing.T, maxPending int) (string, string, config.ChainConfig) {
	tokA, a := tokenFor(t, "alpha")
	tokB, b := tokenFor(t, "beta")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a, b}
	cc.MaxPendingPerToken = maxPending
	return tokA, tokB, cc
}

// authCall is rpcCall with an Authorization header ("" for none) and the
// HTTP status.
func authCall(t *testing.T, url, auth, method string, params, result any) (*rpcErr, int) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "schain." + method, "params": params})
	require.NoError(t, err)
	return authRaw(t, url, body, func(h http.Header) {
		if auth != "" {
			h.Set("Authorization", auth)
		}
	}, result)
}

func authRaw(t *testing.T, url string, body []byte, header func(http.Header), result any) (*rpcErr, int) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if header != nil {
		header(req.Header)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out), "status %d", resp.StatusCode)
	if out.Error != nil {
		return out.Error, resp.StatusCode
	}
	if result != nil {
		require.NoError(t, json.Unmarshal(out.Result, result))
	}
	return nil, resp.StatusCode
}

func bearerOf(tok string) string { return "Bearer " + tok }

// reasonOf decodes the data of an Unauthorized error.
func unauthorizedReason(t *testing.T, e *rpcErr) string {
	require.NotNil(t, e)
	var d struct {
		Reason string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(e.Data, &d))
	return d.Reason
}

// chunkedPost sends body without a Content-Length.
func chunkedPost(t *testing.T, url string, body []byte, auth string) (*rpcErr, int) {
	req, err := http.NewRequest(http.MethodPost, url, io.MultiReader(bytes.NewReader(body)))
	require.NoError(t, err)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Error *rpcErr `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Error, resp.StatusCode
}

func readFile(t *testing.T, name string) string {
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}
