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

	"github.com/s-chain/schain/seaweedfs/storebench"
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
		{Name: "schain", Gateways: shared(t, false), Bucket: "b"},
		{Name: "etcd", Gateways: shared(t, true), Bucket: "b"},
		{Name: "leveldb2", Gateways: shared(t, false)[:1], Bucket: "b"},
	}
	rep, err := storebench.Run(context.Background(), stores, s, io.Discard)
	require.NoError(err)
	for _, st := range rep.Stores {
		require.Positive(st.Put.Requests, st.Name)
		require.Positive(st.Get.Requests, st.Name)
		require.Zero(st.Get.Failures, "%s: reads only what was written", st.Name)
		require.Positive(st.PutPerSec, st.Name)
	}
	require.Equal(storebench.Conditional{Trials: 3}, *rep.Stores[0].Conditional)
	require.Equal(storebench.Conditional{Trials: 3, DoubleCommits: 3}, *rep.Stores[1].Conditional)
	require.Nil(rep.Stores[2].Conditional, "one filer: nothing to race")

	var b strings.Builder
	require.NoError(storebench.WriteTables(&b, rep))
	require.Contains(b.String(), "| etcd | 3 | 3 | 0 |")
	require.Contains(b.String(), "S-Chain store / etcd: PUT throughput")
}
