package objects_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/tests/framework/apitest"
	"github.com/s-chain/schain/tests/framework/seaweedfs/objects"
)

// volume is a fake volume server: it keeps what is PUT and answers HEADs,
// unless it lost everything (a copy that never got the write).
type volume struct {
	srv  *httptest.Server
	mu   sync.Mutex
	data map[string][]byte
	lost bool
}

func newVolume(t *testing.T) *volume {
	v := &volume{data: map[string][]byte{}}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		defer v.mu.Unlock()
		fid := strings.TrimPrefix(r.URL.Path, "/")
		switch r.Method {
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			v.data[fid] = b
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"size":%d}`, len(b))
		case http.MethodHead:
			b, ok := v.data[fid]
			if !ok || v.lost {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		}
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *volume) addr() string { return strings.TrimPrefix(v.srv.URL, "http://") }

// master assigns keys of volume 3 on the first volume server and lists both
// as its copies.
func master(t *testing.T, vols ...*volume) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/dir/assign":
			n, _ := strconv.Atoi(r.URL.Query().Get("count"))
			_ = json.NewEncoder(w).Encode(map[string]any{"fid": "3,01637037d6", "url": vols[0].addr(), "count": n})
		case "/dir/lookup":
			var locs []map[string]string
			for _, v := range vols {
				locs = append(locs, map[string]string{"url": v.addr()})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"locations": locs})
		case "/cluster/status":
			_ = json.NewEncoder(w).Encode(map[string]any{"IsLeader": true, "Leader": strings.TrimPrefix(r.Host, "http://")})
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func writer(t *testing.T, f *apitest.Net, copies int, vols ...*volume) *objects.Writer {
	weed, err := seaweed.New(seaweed.DefaultConfig(master(t, vols...)))
	require.NoError(t, err)
	t.Cleanup(weed.Close)
	rcfg := client.DefaultRouterConfig()
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), rcfg)
	require.NoError(t, err)
	cfg := objects.DefaultConfig("weed", copies)
	cfg.ChunkSize = 4
	cfg.Timeout = 5 * time.Second
	w, err := objects.New(cfg, weed, r)
	require.NoError(t, err)
	return w
}

func put(w *objects.Writer, body string) (*objects.Put, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Put(ctx, "k", strings.NewReader(body), int64(len(body)), api.Condition{Kind: api.IfAbsent})
}

// A chunk acknowledged by the volume server but missing on a copy the
// masters list is not committed: its ids come back as orphans.
func TestTooFewCopiesCommitsNothing(t *testing.T) {
	f := apitest.New(t, 1)
	one, two := newVolume(t), newVolume(t)
	two.lost = true
	_, err := put(writer(t, f, 2, one, two), "0123456789")
	var orphaned *objects.OrphanedError
	require.ErrorAs(t, err, &orphaned)
	require.ErrorIs(t, err, objects.ErrTooFewCopies)
	require.Equal(t, []string{"3,01637037d6", "3,02637037d6", "3,03637037d6"}, orphaned.Fids, "every allocated key, the unwritten ones included")
	require.Equal(t, api.ChunkRef{Range: "weed/keys/3", ID: 1}, orphaned.Chunks[0])
	require.Zero(t, f.Nodes[0].Count("putManifest"), "nothing was committed")
}

// A commit the chain refuses leaves no manifest either; one whose outcome
// is unknown does not call the blobs orphans.
func TestCommitRefusedOrUnknown(t *testing.T) {
	f := apitest.New(t, 1)
	one := newVolume(t)
	w := writer(t, f, 1, one)
	f.Nodes[0].FailNext("putManifest", apitest.RPCError(api.CodePreconditionFailed, "precondition_failed", api.PreconditionData{Reason: "precondition_failed", Current: 7}))
	_, err := put(w, "01234")
	var orphaned *objects.OrphanedError
	require.ErrorAs(t, err, &orphaned)
	require.ErrorIs(t, err, client.ErrPreconditionFailed)
	require.Len(t, orphaned.Fids, 2)
	require.Equal(t, []byte("0123"), one.data["3,01637037d6"], "the blob was written before the commit")

	f.Nodes[0].FailNext("putManifest", apitest.RPCError(api.CodeTimeout, "wait ran out", api.TimeoutData{}))
	_, err = put(w, "01234")
	require.ErrorIs(t, err, objects.ErrCommitUnknown)
	require.False(t, errors.As(err, &orphaned))
}

func TestChunksNameTheirRanges(t *testing.T) {
	f := apitest.New(t, 1)
	one := newVolume(t)
	w := writer(t, f, 1, one)
	ctx := context.Background()
	// The fake chain commits a manifest only on allocated ids, as the
	// masters' reservations make them.
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), client.DefaultRouterConfig())
	require.NoError(t, err)
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "weed/keys/3", Count: 10})
	require.NoError(t, err)
	p, err := put(w, "0123456")
	require.NoError(t, err)
	require.Equal(t, []api.Chunk{
		{Range: "weed/keys/3", ID: 1, Size: 4, Hash: sha("0123")},
		{Range: "weed/keys/3", ID: 2, Size: 3, Hash: sha("456")},
	}, p.Chunks)
	m, err := r.GetManifest(ctx, "weed", "k")
	require.NoError(t, err)
	require.Equal(t, p.Chunks, m.Manifest.Chunks)
	require.Equal(t, sha("0123456"), m.Manifest.ContentHash)
	require.True(t, bytes.Equal([]byte("456"), one.data["3,02637037d6"]))
}

func sha(s string) api.ID { return sha256.Sum256([]byte(s)) }
