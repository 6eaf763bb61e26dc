//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tests/framework/seaweedfs/objects"
)

// killingReader reads body and, once after bytes of it, runs kill.
type killingReader struct {
	body  io.Reader
	read  int
	after int
	kill  func()
}

func (k *killingReader) Read(p []byte) (int, error) {
	if k.kill != nil && k.read >= k.after {
		k.kill()
		k.kill = nil
	}
	n, err := k.body.Read(p[:min(len(p), max(k.after-k.read, 1))])
	k.read += n
	return n, err
}

// TestD_ObjectWriteOrder: objects go on two volume servers (replica
// placement 001) in the design's write order. A committed object's chunks
// are on both copies and named by its manifest; with a volume server
// killed in the middle of an object, no manifest is committed and the
// allocated file ids come back as orphans.
func TestD_ObjectWriteOrder(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pfx := prefix(t)
	freshFloors(t, pfx)
	c := startCluster(t, cluster.ModeSChain, pfx, nil)
	second, err := c.AddVolumeServer(ctx, "volume2", 16)
	require.NoError(err)
	wcfg := seaweed.DefaultConfig(c.MasterAddrs()...)
	wcfg.Replication = "001"
	weed, err := seaweed.New(wcfg)
	require.NoError(err)
	defer weed.Close()
	r := router(t)
	cfg := objects.DefaultConfig(pfx, 2)
	// A fresh cluster's master defers its first volume growth until two
	// pulses after the last volume server joined (about 10 s), as long as
	// one assign waits for it: the object starts once replicated volumes
	// exist, whichever assign saw them grown.
	waitFor(t, time.Minute, "replicated volumes of "+cfg.Collection, func() bool {
		_, err := weed.Assign(ctx, cfg.Collection, 1)
		return err == nil
	})
	cfg.ChunkSize = 256 << 10
	w, err := objects.New(cfg, weed, r)
	require.NoError(err)

	body := make([]byte, 1<<20)
	_, _ = rand.Read(body)
	put, err := w.Put(ctx, "dir/whole.bin", bytes.NewReader(body), int64(len(body)), api.Condition{Kind: api.IfAbsent})
	require.NoError(err)
	require.Len(put.Chunks, 4)
	require.NotZero(put.Version)
	var m *api.ManifestReply
	waitFor(t, 30*time.Second, "the manifest on the node that answers", func() bool {
		m, err = r.GetManifest(ctx, pfx, "dir/whole.bin")
		return err == nil
	})
	require.Equal(put.Chunks, m.Manifest.Chunks)
	for i, fid := range put.Fids {
		f, err := seaweed.ParseFileID(fid)
		require.NoError(err)
		for _, addr := range []string{c.VolumeAddr(), second} {
			got := readNeedle(t, ctx, addr, f)
			require.Equal(body[i*cfg.ChunkSize:(i+1)*cfg.ChunkSize], got, "chunk %d on %s", i, addr)
		}
	}

	// The second volume server dies in the middle of the next object.
	killed := &killingReader{body: bytes.NewReader(body), after: 300 << 10, kill: func() {
		require.NoError(c.Kill(ctx, "volume2"))
		t.Logf("killed volume2 after 300 KiB of the object")
	}}
	_, err = w.Put(ctx, "dir/torn.bin", killed, int64(len(body)), api.Condition{Kind: api.IfAbsent})
	var orphaned *objects.OrphanedError
	require.ErrorAs(err, &orphaned, "%v", err)
	require.Len(orphaned.Fids, 4, "every allocated id is reported")
	require.Len(orphaned.Chunks, 4)
	t.Logf("orphaned: %v", orphaned)
	_, err = r.GetManifest(ctx, pfx, "dir/torn.bin")
	require.ErrorIs(err, client.ErrNotFound, "no manifest points at the torn object")
	for _, ch := range orphaned.Chunks {
		a, err := r.GetAllocation(ctx, ch.Range)
		require.NoError(err)
		require.Less(ch.ID, a.Next, "an orphan is an id S-Chain committed")
	}
}

func readNeedle(t *testing.T, ctx context.Context, addr string, fid seaweed.FileID) []byte {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/"+fid.String(), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s on %s", fid, addr)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}
