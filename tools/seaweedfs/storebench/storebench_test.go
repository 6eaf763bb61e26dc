package storebench_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/seaweedfs/storebench"
)

// gateway is a fake S3 gateway; exclusive creates are checked under one
// lock unless racy, where every one of them succeeds (a lookup before the
// write that two writers both pass).
func gateway(t *testing.T, objects map[string][]byte, mu *sync.Mutex, racy bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			if _, taken := objects[r.URL.Path]; taken && !racy && r.Header.Get("If-None-Match") == "*" {
				w.WriteHeader(http.StatusPreconditionFailed)
				return
			}
			objects[r.URL.Path] = b
		case http.MethodGet:
			b, ok := objects[r.URL.Path]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			_, _ = w.Write(b)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func shared(t *testing.T, racy bool) []string {
	objects, mu := map[string][]byte{}, &sync.Mutex{}
	return []string{gateway(t, objects, mu, racy), gateway(t, objects, mu, racy)}
}

func TestRunCountsDoubleCommits(t *testing.T) {
	require := require.New(t)
	s := storebench.Settings{Clients: 2, Rounds: 2, RoundDuration: 50 * time.Millisecond, ObjectSize: 16, Trials: 3, Timeout: time.Second}
	stores := []storebench.Store{
		{Name: "schain", Gateways: shared(t, false), Bucket: "b", CPU: &ticking{step: 10 * time.Millisecond}},
		{Name: "etcd", Gateways: shared(t, true), Bucket: "b", CPU: &ticking{step: 20 * time.Millisecond}},
		{Name: "leveldb2", Gateways: shared(t, false)[:1], Bucket: "b"},
	}
	validators := &ticking{step: 30 * time.Millisecond, blocks: 2}
	rep, err := storebench.Run(context.Background(), stores, []storebench.Group{{Name: "validators", CPU: validators}}, s, io.Discard)
	require.NoError(err)
	for _, st := range rep.Stores {
		require.Positive(st.Put.Requests, st.Name)
		require.Positive(st.Get.Requests, st.Name)
		require.Zero(st.Get.Failures, "%s: reads only what was written", st.Name)
		require.Positive(st.PutPerSec, st.Name)
	}
	// Each PUT round reads every group before and after it: one step each.
	own, val := cpuOf(rep.Stores[0], "own processes"), cpuOf(rep.Stores[0], "validators")
	require.Equal(20*time.Millisecond, own.Used, "two rounds of the store's own processes")
	require.Equal(60*time.Millisecond, val.Used, "two rounds of the shared group, during this store's rounds only")
	require.Equal(uint64(4), val.Blocks)
	require.EqualValues(rep.Stores[0].Put.Requests-rep.Stores[0].Put.Failures, val.Requests, "the PUTs answered")
	require.Equal(40*time.Millisecond, cpuOf(rep.Stores[1], "own processes").Used)
	require.Len(rep.Stores[2].PutCPU, 1, "no own processes given: the shared group only")
	require.Equal(60*time.Millisecond, cpuOf(rep.Stores[2], "validators").Used)
	require.Equal(storebench.Conditional{Trials: 3}, *rep.Stores[0].Conditional)
	require.Equal(storebench.Conditional{Trials: 3, DoubleCommits: 3}, *rep.Stores[1].Conditional)
	require.Nil(rep.Stores[2].Conditional, "one filer: nothing to race")

	var b strings.Builder
	require.NoError(storebench.WriteTables(&b, rep))
	require.Contains(b.String(), "| etcd | 3 | 3 | 0 |")
	require.Contains(b.String(), "S-Chain store / etcd: PUT throughput")
	require.Contains(b.String(), "| schain | validators |")
	require.Contains(b.String(), "At 0.5x leveldb2's PUT rate")
}

// TestPartsBoundTheRest: a part of a group (the validators' nodes) is
// reported beside it, is not added to the store's CPU per PUT, and gives
// the bound of the store's cost with the rest of its group free.
func TestPartsBoundTheRest(t *testing.T) {
	require := require.New(t)
	use := func(perPut time.Duration) benchmark.CPUUse {
		return benchmark.CPUUse{Used: 100 * perPut, Wall: time.Second, Requests: 100}
	}
	rep := &storebench.Report{
		Machine: benchmark.Machine{CPUs: 2},
		Stores: []storebench.Result{
			{Name: "schain", PutPerSec: 100, PutCPU: []storebench.GroupCPU{
				{Group: "own processes", Use: use(2 * time.Millisecond)},
				{Group: "validators", Use: use(6 * time.Millisecond)},
				{Group: "nodes", PartOf: "validators", Use: use(2 * time.Millisecond)},
				{Group: "machine", Use: use(9 * time.Millisecond)},
			}},
			{Name: "etcd", PutPerSec: 200},
			{Name: "leveldb2", PutPerSec: 800},
		},
	}
	var b strings.Builder
	require.NoError(storebench.WriteTables(&b, rep))
	out := b.String()
	require.Contains(out, "| schain | nodes (of the validators) | 0.20 | 2.00 ms |")
	require.Contains(out, "would keep 1.60 cores busy at the CPU per PUT measured here (8.00 ms,", "own processes and validators; not the part, not the machine")
	require.Contains(out, "Of the validators, the nodes alone counted (the rest free): at 1.0x etcd's PUT rate (200/s), 0.80 cores (4.00 ms per PUT); the machine has 2.")
	require.Contains(out, "at 0.5x leveldb2's PUT rate (400/s), 1.60 cores (4.00 ms per PUT)")
}

// ticking is a CPU source whose reading grows by step (and blocks) per read.
type ticking struct {
	mu     sync.Mutex
	step   time.Duration
	blocks uint64
	read   benchmark.CPUReading
}

func (c *ticking) CPUTime(context.Context) (benchmark.CPUReading, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read.Used += c.step
	c.read.Height += c.blocks
	return c.read, nil
}

func cpuOf(r storebench.Result, group string) benchmark.CPUUse {
	for _, g := range r.PutCPU {
		if g.Group == group {
			return g.Use
		}
	}
	return benchmark.CPUUse{}
}
