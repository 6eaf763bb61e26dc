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

// TestBatcherLeaderReturnsWithItsAnswer (issue 30, finding 5): the call
// that took the free exchange slot sent batches until the queue drained,
// and only then returned: under open-loop load (a request every 0.5 ms,
// exchanges of 2 ms) a call with a 200 ms deadline returned after more
// than a second. A call returns with its own answer (or its deadline),
// whoever keeps sending. (Here: a request every 0.25 ms, exchanges of
// 5 ms, so that the queue never drains.)
func TestBatcherLeaderReturnsWithItsAnswer(t *testing.T) {
	first := make(chan struct{}) // the leader's own exchange waits for the load
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string          `json:"method"`
			ID     uint64          `json:"id"`
			Params json.RawMessage `json:"params"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			return
		}
		once.Do(func() { <-first })
		time.Sleep(5 * time.Millisecond)
		var result any = api.AllocateReply{Pooled: true, Count: 1}
		if req.Method == "schain.allocateBatch" {
			var args api.AllocateBatchArgs
			_ = json.Unmarshal(req.Params, &args)
			rep := api.AllocateBatchReply{}
			for range args.Requests {
				rep.Results = append(rep.Results, api.AllocateResult{Reply: &api.AllocateReply{Pooled: true, Count: 1}})
			}
			result = rep
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "chain", DefaultConfig())
	require.NoError(t, err)
	b := newBatcher(c, 1)

	// The measured call takes the free slot; then the load comes.
	took := make(chan time.Duration, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _ = b.allocate(ctx, api.AllocateArgs{Range: "r", Count: 1, Pooled: true})
		took <- time.Since(start)
	}()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.inFlight == 1
	}, 5*time.Second, 100*time.Microsecond)
	load, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Add(1)
	go func() { // open loop: a request every 0.25 ms for up to 2 s
		defer wg.Done()
		tick := time.NewTicker(250 * time.Microsecond)
		defer tick.Stop()
		end := time.After(2 * time.Second)
		for {
			select {
			case <-load.Done():
				return
			case <-end:
				return
			case <-tick.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(load, 5*time.Second)
				defer cancel()
				_, _ = b.allocate(ctx, api.AllocateArgs{Range: "r", Count: 1, Pooled: true})
			}()
		}
	}()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) >= 8
	}, 5*time.Second, 100*time.Microsecond, "requests queue behind the leader's exchange")
	close(first)
	select {
	case d := <-took:
		require.Less(t, d, 400*time.Millisecond, "a call with a 200 ms deadline returned after %v", d)
	case <-time.After(5 * time.Second):
		t.Fatal("a call with a 200 ms deadline did not return within 5 s")
	}
}
