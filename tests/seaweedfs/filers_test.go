//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/objload"
)

// schainFilerToml is filer.toml for the S-Chain store on this package's
// network, binding chunks whose keys come from pfx's ranges.
func schainFilerToml(pfx string) string {
	return fmt.Sprintf("[schain]\nenabled = true\nrpc = %q\nchain = %q\ntoken_file = %q\nkey_prefix = %q\n",
		strings.Join(network.ChainURIsBase(), ","), network.ChainID.String(), network.TokenPath(), pfx)
}

// ifNoneMatch is the context key that makes s3Conditional's transport send
// "If-None-Match: *" (minio-go has no option for it on PUT).
type ifNoneMatch struct{}

type conditionalTransport struct{ next http.RoundTripper }

func (t conditionalTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Context().Value(ifNoneMatch{}) != nil && r.Method == http.MethodPut {
		r = r.Clone(r.Context())
		r.Header.Set("If-None-Match", "*")
	}
	return t.next.RoundTrip(r)
}

// gateway is one S3 gateway through minio-go, the S3 client.
type gateway struct {
	c      *minio.Client
	bucket string
}

func newGateway(t *testing.T, endpoint, bucket string) *gateway {
	c, err := minio.New(endpoint, &minio.Options{Region: "us-east-1", Transport: conditionalTransport{http.DefaultTransport}})
	require.NoError(t, err)
	return &gateway{c: c, bucket: bucket}
}

func (g *gateway) Put(ctx context.Context, key string, body []byte) error {
	_, err := g.c.PutObject(ctx, g.bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

// PutIfAbsent is an exclusive create (If-None-Match: *).
func (g *gateway) PutIfAbsent(ctx context.Context, key string, body []byte) error {
	return g.Put(context.WithValue(ctx, ifNoneMatch{}, true), key, body)
}

func (g *gateway) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := g.c.GetObject(ctx, g.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, fmt.Errorf("%w: %s", objload.ErrNotFound, key)
	}
	return b, err
}

func (g *gateway) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	for o := range g.c.ListObjects(ctx, g.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		keys = append(keys, o.Key)
	}
	sort.Strings(keys)
	return keys, nil
}

// TestE_FilersShareSChain: two filers and two S3 gateways on one S-Chain
// store. What one gateway writes the other reads, lists and deletes;
// concurrent exclusive creates of one key through both gateways commit
// once; with a filer and then the bucket's owner validator killed with
// SIGKILL under load, every acknowledged object reads back intact through
// the other filer, and the final listing is exactly the acknowledged
// objects.
func TestE_FilersShareSChain(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	pfx := prefix(t)
	freshFloors(t, pfx)
	c := startCluster(t, cluster.ModeSChain, pfx, nil)
	toml := schainFilerToml(pfx)
	f1, err := c.AddFiler(ctx, "filer1", "", toml)
	require.NoError(err)
	f2, err := c.AddFiler(ctx, "filer2", "", toml)
	require.NoError(err)
	s1, err := c.AddS3(ctx, "s3-1", f1, f2)
	require.NoError(err)
	s2, err := c.AddS3(ctx, "s3-2", f2, f1)
	require.NoError(err)
	const bucket = "shared"
	g1, g2 := newGateway(t, s1, bucket), newGateway(t, s2, bucket)
	require.NoError(g1.c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}))

	// One gateway writes, the other reads, lists and deletes.
	require.NoError(g1.Put(ctx, "hello/a.txt", []byte("from gateway 1")))
	got, err := g2.Get(ctx, "hello/a.txt")
	require.NoError(err)
	require.Equal([]byte("from gateway 1"), got)
	keys, err := g2.List(ctx, "hello/")
	require.NoError(err)
	require.Equal([]string{"hello/a.txt"}, keys)
	require.NoError(g2.c.RemoveObject(ctx, bucket, "hello/a.txt", minio.RemoveObjectOptions{}))
	_, err = g1.Get(ctx, "hello/a.txt")
	require.ErrorIs(err, objload.ErrNotFound)

	// The store reads nothing the filer did not ask for: a new object's
	// insert does not read the entry again (the patch's CreateEntry; the
	// store wrapper's lookup for hard links was a round trip to the owner
	// per PUT that the filer's own metrics never showed), and the check of
	// its directory after the insert rides the insert's exchange
	// (WithDirectoryRead); it writes once per object.
	type counts struct{ gets, puts, finds, lists float64 }
	read := func() (n counts) {
		for _, f := range []string{f1, f2} {
			m, err := c.Metrics(ctx, f)
			require.NoError(err)
			require.NotNil(m["SeaweedFS_filerStore_schain_calls_total"], "the store's exchanges are in the filer's metrics")
			for _, name := range []string{"SeaweedFS_filerStore_schain_calls_total", "SeaweedFS_filerStore_request_total"} {
				for _, s := range m[name].GetMetric() {
					for _, l := range s.GetLabel() {
						v := s.GetCounter().GetValue()
						switch l.GetValue() {
						case "get":
							n.gets += v
						case "put":
							n.puts += v
						case "find":
							n.finds += v
						case "prefixList":
							n.lists += v
						}
					}
				}
			}
		}
		return n
	}
	require.NoError(g1.Put(ctx, "calls/first", []byte("makes the directory")))
	before := read()
	const newObjects = 20
	for i := range newObjects {
		require.NoError(g1.Put(ctx, fmt.Sprintf("calls/%02d", i), []byte("new")))
	}
	after := read()
	gets, finds, lists, puts := after.gets-before.gets, after.finds-before.finds, after.lists-before.lists, after.puts-before.puts
	t.Logf("%d new objects: the store read %.0f times (the filer looked up %.0f entries and listed %.0f times) and wrote %.0f times",
		newObjects, gets, finds, lists, puts)
	// A few exchanges of the filers' own (their metadata logs) may fall in;
	// a listing from a start name reads that entry first.
	require.LessOrEqual(gets-(finds-newObjects)-lists, float64(newObjects)/2, "store reads the filer did not ask for, or directory checks the inserts did not answer")
	require.GreaterOrEqual(puts, float64(newObjects))
	require.LessOrEqual(puts, float64(newObjects)*1.25, "writes per new object")

	// Exclusive creates of one key, two through each gateway at once: one
	// commits, the others get 412.
	const trials = 5
	for trial := range trials {
		key := fmt.Sprintf("exclusive/%d", trial)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = []*gateway{g1, g2}[i%2].PutIfAbsent(ctx, key, []byte(fmt.Sprintf("writer %d", i)))
			}()
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			if err == nil {
				won++
				continue
			}
			require.Equal(http.StatusPreconditionFailed, minio.ToErrorResponse(err).StatusCode, "writer %d of trial %d: %v", i, trial, err)
		}
		require.Equal(1, won, "trial %d: exclusive creates that succeeded", trial)
	}

	// Load through both gateways; a filer, then the bucket's owner, killed.
	cfg := objload.DefaultConfig("load")
	cfg.Workers, cfg.PutTimeout = 4, 3*time.Minute
	var runs []*objectRun
	for i, g := range []*gateway{g1, g2} {
		cfg.Prefix = fmt.Sprintf("load/g%d", i+1)
		runs = append(runs, startRun(t, g, cfg))
	}
	acked := func() int { return runs[0].acked() + runs[1].acked() }
	waitFor(t, time.Minute, "100 objects before the kills", func() bool { return acked() >= 100 })
	require.NoError(c.Kill(ctx, "filer1"))
	t.Logf("killed filer1 after %d objects", acked())
	at := acked()
	waitFor(t, 2*time.Minute, "100 more objects after the filer kill", func() bool { return acked() >= at+100 })
	owner, err := router(t).GetOwner(ctx, pfx)
	require.NoError(err)
	require.NoError(network.KillNode(ctx, ids.NodeID(owner.Owner)))
	t.Logf("killed validator %s (the owner of %s) after %d objects", owner.Owner, pfx, acked())
	t.Cleanup(func() { restartNode(t, ids.NodeID(owner.Owner)) })
	at = acked()
	waitFor(t, 4*time.Minute, "100 more objects after the validator kill", func() bool { return acked() >= at+100 })
	var all []objload.Put
	failed := map[string]bool{} // keys with a failed attempt, whatever it left
	for _, r := range runs {
		res := r.stop()
		all = append(all, res.Puts...)
		for _, f := range res.Failures {
			failed[f.Key] = true
		}
		require.Zero(res.FinalFailures(), "an object gave up: %v", res.Failures)
	}
	t.Logf("%d objects acknowledged, %d keys had a failed attempt", len(all), len(failed))

	// Every acknowledged object reads back intact through the filer that
	// lived; the listing holds exactly the acknowledged objects.
	check := objload.Verify(ctx, g2, objload.Result{Puts: all}, 8)
	require.NoError(check.Err())
	listed, err := g2.List(ctx, "load/")
	require.NoError(err)
	ackedKeys := map[string]bool{}
	for _, p := range all {
		ackedKeys[p.Key] = true
	}
	var missing, extra []string
	for _, k := range listed {
		// Only an attempt that failed after the store committed it (the
		// answer lost in a kill, never retried because the run ended) may
		// have left an object nobody acknowledged.
		if !ackedKeys[k] && !failed[k] {
			extra = append(extra, k)
		}
		delete(ackedKeys, k)
	}
	for k := range ackedKeys {
		missing = append(missing, k)
	}
	require.Empty(missing, "acknowledged objects missing from the listing")
	require.Empty(extra, "objects listed that nobody acknowledged")
	require.GreaterOrEqual(len(listed), len(all))
}

// objectRun is objload writing in the background.
type objectRun struct {
	r      *objload.Runner
	cancel context.CancelFunc
	done   chan objload.Result
}

func startRun(t *testing.T, store objload.Store, cfg objload.Config) *objectRun {
	r, err := objload.New(store, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	o := &objectRun{r: r, cancel: cancel, done: make(chan objload.Result, 1)}
	go func() { o.done <- r.Run(ctx) }()
	t.Cleanup(func() { o.stop() })
	return o
}

func (o *objectRun) acked() int { return len(o.r.Snapshot().Puts) }

func (o *objectRun) stop() objload.Result {
	o.cancel()
	res, ok := <-o.done
	if ok {
		close(o.done)
	}
	return res
}

// restartNode starts a validator a test killed, for the tests after it.
func restartNode(t *testing.T, id ids.NodeID) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := network.StartNode(ctx, id); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("restarting %s: %v", id, err)
	}
}
