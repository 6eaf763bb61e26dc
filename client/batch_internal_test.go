package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
)

// TestBatcherCoalesces: while the only exchange slot is busy, requests
// queue and then go out together in one allocateBatch; each caller gets
// its own result, errors included.
func TestBatcherCoalesces(t *testing.T) {
	require := require.New(t)
	release := make(chan struct{})
	var (
		mu      sync.Mutex
		methods []string
		sizes   []int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string          `json:"method"`
			ID     uint64          `json:"id"`
			Params json.RawMessage `json:"params"`
		}
		require.NoError(json.NewDecoder(r.Body).Decode(&req))
		mu.Lock()
		methods = append(methods, req.Method)
		mu.Unlock()
		var result any
		switch req.Method {
		case "schain.allocate":
			<-release // hold the slot until the others have queued
			result = api.AllocateReply{Pooled: true, Base: 0, Count: 1}
		case "schain.allocateBatch":
			var args api.AllocateBatchArgs
			require.NoError(json.Unmarshal(req.Params, &args))
			mu.Lock()
			sizes = append(sizes, len(args.Requests))
			mu.Unlock()
			rep := api.AllocateBatchReply{}
			for _, a := range args.Requests {
				if a.Range == "bad" {
					rep.Results = append(rep.Results, api.AllocateResult{Error: api.NewError(api.CodeNotOwner, "not mine", api.NotOwnerData{Range: "bad"})})
					continue
				}
				rep.Results = append(rep.Results, api.AllocateResult{Reply: &api.AllocateReply{Pooled: true, Base: a.Count * 100, Count: a.Count}})
			}
			result = rep
		}
		require.NoError(json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}))
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "chain", DefaultConfig())
	require.NoError(err)
	b := newBatcher(c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	first := make(chan error, 1)
	go func() {
		_, err := b.allocate(ctx, api.AllocateArgs{Range: "a", Count: 1, Pooled: true})
		first <- err
	}()
	require.Eventually(func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.inFlight == 1 && len(b.queue) == 0
	}, 5*time.Second, time.Millisecond, "the first request holds the slot")

	const n = 5
	type answer struct {
		count uint64
		rep   *api.AllocateReply
		err   error
	}
	answers := make(chan answer, n)
	for k := 1; k <= n; k++ {
		rng := "a"
		if k == n {
			rng = "bad"
		}
		go func() {
			rep, err := b.allocate(ctx, api.AllocateArgs{Range: rng, Count: uint64(k), Pooled: true})
			answers <- answer{uint64(k), rep, err}
		}()
	}
	require.Eventually(func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == n
	}, 5*time.Second, time.Millisecond, "the others queue behind the busy slot")
	close(release)
	require.NoError(<-first)
	for range n {
		a := <-answers
		if a.count == n {
			_, ok := IsNotOwner(a.err)
			require.True(ok, "the bad request gets its own NotOwner: %v", a.err)
			continue
		}
		require.NoError(a.err)
		require.Equal(a.count*100, a.rep.Base, "each caller gets its own result")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal([]string{"schain.allocate", "schain.allocateBatch"}, methods, "a lone request goes out alone, the queued ones together")
	require.Equal([]int{n}, sizes)
}
