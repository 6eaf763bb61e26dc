package vm_test

import (
	"bytes"
	"fmt"
	"io"
	stdnet "net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/vm/config"
)

// TestAbusiveBurst: oversized bodies, 1000 concurrent connections (held
// open half-sent, and junk requests on their own connections), malformed
// JSON and bad tokens hit the owner's API at once. Afterwards it still
// serves, signs nothing for the abusers, and every allocation accepted
// before is intact on every node.
func TestAbusiveBurst(t *testing.T) {
	require := require.New(t)
	tok, a := tokenFor(t, "alpha")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a}
	cc.MaxRequestBytes = 16 << 10
	an := newAuthNet(t, 3, cc)
	an.ready(10)
	mine := an.rangeOf(0, "burst")
	endpoint, auth := an.url(0), bearerOf(tok)

	// Accepted before the burst.
	var before []api.AllocateReply
	for i := 0; i < 5; i++ {
		var r api.AllocateReply
		e, _ := authCall(t, endpoint, auth, "allocate", api.AllocateArgs{Range: mine, Count: uint64(i + 1)}, &r)
		require.Nil(e)
		before = append(before, r)
	}
	_, err := an.round(0, 10)
	require.NoError(err)
	receipts := map[ids.ID]*api.ReceiptReply{}
	for _, r := range before {
		rc, err := an.vms[0].Writer().Receipt(ids.ID(r.TxID))
		require.NoError(err)
		require.Equal(api.StatusAccepted, rc.Status)
		receipts[ids.ID(r.TxID)] = rc
	}
	const accepted = 1 + 2 + 3 + 4 + 5
	root := an.vms[0].Chain().State()
	next, err := root.Counter(mine)
	require.NoError(err)
	require.Equal(uint64(accepted), next)

	// The burst.
	u, err := url.Parse(endpoint)
	require.NoError(err)
	const held = 1000
	conns := make([]stdnet.Conn, 0, held)
	for i := 0; i < held; i++ {
		c, err := stdnet.Dial("tcp", u.Host)
		require.NoError(err)
		// Half a request: headers promise a body that never comes.
		_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", u.Host)
		require.NoError(err)
		conns = append(conns, c)
	}
	junk := []func() (*http.Request, error){
		func() (*http.Request, error) { // oversized, with a valid token
			r, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(bytes.Repeat([]byte("x"), 20<<10)))
			if err == nil {
				r.Header.Set("Authorization", auth)
			}
			return r, err
		},
		func() (*http.Request, error) { // oversized, without a length
			r, err := http.NewRequest(http.MethodPost, endpoint, io.MultiReader(strings.NewReader(strings.Repeat("[", 40<<10))))
			if err == nil {
				r.ContentLength = -1
			}
			return r, err
		},
		func() (*http.Request, error) { // malformed JSON
			return http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"schain.allocate","params":{`))
		},
		func() (*http.Request, error) { // not JSON-RPC at all
			return http.NewRequest(http.MethodPost, endpoint, strings.NewReader("\x00\xff garbage"))
		},
		func() (*http.Request, error) { // a write with a guessed token
			r, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(mustJSON(t, "allocate", api.AllocateArgs{Range: mine, Count: 1000})))
			if err == nil {
				r.Header.Set("Authorization", "Bearer schain_guess")
			}
			return r, err
		},
		func() (*http.Request, error) { // a write without a token
			return http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(mustJSON(t, "putManifest", api.PutManifestArgs{Bucket: mine, Key: "x", Deleted: true})))
		},
		func() (*http.Request, error) { // deeply nested params
			return http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"schain.getNode","params":`+strings.Repeat("[", 8000)))
		},
		func() (*http.Request, error) { // wrong HTTP method
			return http.NewRequest(http.MethodGet, endpoint, nil)
		},
	}
	const burst = 400
	var wg sync.WaitGroup
	statuses := make(chan int, burst)
	for i := 0; i < burst; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, err := junk[i%len(junk)]()
			if err != nil {
				statuses <- -1
				return
			}
			if req.Header.Get("Content-Type") == "" {
				req.Header.Set("Content-Type", "application/json")
			}
			// One connection per request.
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
			resp, err := hc.Do(req)
			if err != nil {
				statuses <- 0 // the server may close an oversized upload early
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		}(i)
	}

	// While 1000 connections hang and the junk flows, the node serves reads
	// and authorized writes.
	var node api.NodeReply
	e, _ := authCall(t, endpoint, "", "getNode", api.Empty{}, &node)
	require.Nil(e)
	var during api.AllocateReply
	e, _ = authCall(t, endpoint, auth, "allocate", api.AllocateArgs{Range: mine, Count: 7}, &during)
	require.Nil(e)

	wg.Wait()
	close(statuses)
	seen := map[int]int{}
	for s := range statuses {
		seen[s]++
		require.NotEqual(-1, s)
		require.NotEqual(http.StatusInternalServerError, s)
	}
	t.Logf("burst statuses: %v", seen)
	require.Positive(seen[http.StatusRequestEntityTooLarge], "oversized bodies answered 413")
	for _, c := range conns {
		require.NoError(c.Close())
	}

	// Still serving; only the authorized allocation was signed.
	require.Equal(1, an.vms[0].Mempool().Len(), "the abusers made the node sign nothing")
	_, err = an.round(0, 10)
	require.NoError(err)
	for i := range an.vms {
		e, _ := authCall(t, an.url(i), "", "getNode", api.Empty{}, &node)
		require.Nil(e)
		next, err := an.vms[i].Chain().State().Counter(mine)
		require.NoError(err)
		require.Equal(uint64(accepted+7), next, "node %d: only the accepted allocations moved the counter", i)
		for id, want := range receipts {
			rc, err := an.vms[i].Writer().Receipt(id)
			require.NoError(err)
			require.Equal(want, rc, "node %d: accepted receipt %s intact", i, id)
		}
	}
	rc, err := an.vms[1].Writer().Receipt(ids.ID(during.TxID))
	require.NoError(err)
	require.Equal(api.StatusAccepted, rc.Status)
	require.Equal(uint64(accepted), rc.Entries[during.Index].Base)
	require.Positive(an.rejects(0, "body_too_large", "alpha"))
	require.Positive(an.rejects(0, "body_too_large", "none"))
	require.Positive(an.rejects(0, api.ReasonInvalid, "none"))
	require.Positive(an.rejects(0, api.ReasonMissing, "none"))
}
