//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/objload"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
)

// TestRaftlessMasters: 3 masters without raft (type schain-raftless) serve
// every client themselves: uploaders through the master list, a filer and
// an S3 gateway (a real S3 client writing and deleting objects), and `weed
// shell` taking the admin lock, listing and vacuuming volumes in a loop.
// Each master in turn is killed -9 and restarted; then the master serving a
// shell that holds the lock is SIGSTOPped past the lock's TTL, another
// shell takes the lock through another master, and the paused master is
// resumed. No key is issued twice, every acknowledged upload and object
// reads back, no client waits for another master through a kill, and the
// chain's lease history shows one lock holder at a time and one vacuum of
// a volume at a time.
func TestRaftlessMasters(t *testing.T) {
	require := require.New(t)
	pfx := prefix(t)
	floors := freshFloors(t, pfx)
	from := chainHeight(t)
	c := startCluster(t, cluster.ModeRaftless, pfx, map[string]string{"schain_lock_ttl": "4s", "schain_vacuum_ttl": "6s"},
		func(cfg *cluster.Config) { cfg.S3 = true })
	masters := c.MasterAddrs()

	u := startUploads(t, c, 3)
	s3 := newS3Store(t, c.S3Endpoint(), "raftless")
	objects := startObjects(t, s3, "s3", 3)
	filer := objload.NewHTTPStore("http://" + httpOf(c.FilerAddr()) + "/raftless")
	files := startObjects(t, filer, "filer", 2)
	garbage := startDeletes(t, s3, objects)
	shells := startShellLoop(t, c)
	waitFor(t, 2*time.Minute, "uploads, objects and files before the first kill", func() bool {
		return u.acked() >= 200 && len(objects.r.Snapshot().Puts) >= 100 && len(files.r.Snapshot().Puts) >= 50
	})

	type window struct {
		name                    string
		from, restarted, served time.Time
	}
	var kills []window
	for i, m := range masters {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		at := time.Now()
		require.NoError(c.KillMaster(ctx, i))
		cancel()
		t.Logf("killed %s (master%d) with SIGKILL", m, i+1)
		waitFor(t, time.Minute, "3 s and progress after the kill", func() bool {
			return time.Since(at) >= 3*time.Second && u.ackedSince(at) >= 100 &&
				objects.r.Snapshot().AckedSince(at) >= 30 && files.r.Snapshot().AckedSince(at) >= 20
		})
		restarted := time.Now()
		require.NoError(c.StartMaster(i))
		waitFor(t, time.Minute, "the restarted master to serve uploads", func() bool { return u.ackedAt(m, restarted) >= 20 })
		kills = append(kills, window{fmt.Sprintf("master%d", i+1), at, restarted, time.Now()})
	}
	shellRuns := shells.stop()

	// The master serving a shell that holds the lock pauses past the TTL.
	lockRange := schainseq.LockRange(pfx, "shell")
	holder := startShell(t, c, masters[1])
	holder.send("lock")
	held := waitLease(t, lockRange, func(l leaseState) bool { return l.Held })
	t.Logf("shell through %s holds the lock: token %d", masters[1], held.Token)
	pausedAt := time.Now()
	require.NoError(c.PauseMaster(1))
	waitLease(t, lockRange, func(l leaseState) bool { return !l.Held })
	second := runShell(t, c, masters[0], "lock", "volume.list", "unlock")
	require.NoError(second.err, "a second shell takes the lock once the first's lease expired: %s", second.out)
	require.NoError(c.ResumeMaster(1))
	resumedAt := time.Now()
	t.Logf("master2 paused %s; a second shell took the lock through %s meanwhile", describe(resumedAt.Sub(pausedAt)), masters[0])
	holder.send("volume.list", "unlock")
	first := holder.close()
	waitFor(t, time.Minute, "progress after the pause", func() bool {
		return u.ackedSince(resumedAt) >= 50 && objects.r.Snapshot().AckedSince(resumedAt) >= 20
	})

	deleted := garbage.stop()
	res := u.stop()
	objRes, fileRes := objects.stop(), files.stop()

	check := verify(t, res)
	require.NoError(check.Err())
	require.Zero(check.IssuedTwice)
	require.Equal(check.Uploads, check.ReadBack)
	require.Zero(check.Failed, "an upload gave up: %+v", lastFailures(res))
	requireCommitted(t, pfx, floors, res)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kept := objRes
	kept.Puts = slices.DeleteFunc(slices.Clone(objRes.Puts), func(p objload.Put) bool { return deleted[p.Key] })
	objCheck := objload.Verify(ctx, s3, kept, 8)
	require.NoError(objCheck.Err(), "S3 objects")
	fileCheck := objload.Verify(ctx, filer, fileRes, 8)
	require.NoError(fileCheck.Err(), "filer files")
	for key := range deleted {
		_, err := s3.Get(ctx, key)
		require.ErrorIs(err, objload.ErrNotFound, "deleted %s", key)
	}
	require.Zero(objRes.FinalFailures(), "an S3 PUT gave up: %v", lastObjectFailures(objRes))
	require.Zero(fileRes.FinalFailures(), "a filer PUT gave up: %v", lastObjectFailures(fileRes))

	history := leaseHistory(t, from, pfx+"/")
	lockGrants, vacuumGrants := history.grants(lockRange), 0
	for rng := range history {
		if strings.HasPrefix(rng, pfx+"/vacuum/") {
			vacuumGrants += history.grants(rng)
		}
	}
	require.NoError(history.overlaps(), "two holders of one lease at once")
	require.GreaterOrEqual(lockGrants, 2, "the paused shell's grant and the second shell's")
	require.Positive(vacuumGrants, "the shells' volume.vacuum compacted volumes under their leases")
	last := history[lockRange][len(history[lockRange])-1]
	require.Greater(last.Token, held.Token, "the second shell holds a higher fencing token")

	var worst time.Duration
	var during []string
	for _, k := range kills {
		for _, w := range []struct {
			what     string
			from, to time.Time
		}{{"kill", k.from, k.restarted}, {"restart", k.restarted, k.served}} {
			up, obj, file := longestUpload(res, w.from, w.to), objRes.Longest(w.from, w.to), fileRes.Longest(w.from, w.to)
			worst = max(worst, up, obj, file)
			during = append(during, fmt.Sprintf("%s %s: upload %s, S3 %s, filer %s", w.what, k.name, describe(up), describe(obj), describe(file)))
		}
	}
	logSlowest(t, res, map[string]time.Time{"kill 1": kills[0].from, "restart 1": kills[0].restarted,
		"kill 2": kills[1].from, "restart 2": kills[1].restarted, "kill 3": kills[2].from, "restart 3": kills[2].restarted})
	for _, r := range []objload.Result{objRes, fileRes} {
		ps := slices.Clone(r.Puts)
		slices.SortFunc(ps, func(a, b objload.Put) int { return int(b.Wait - a.Wait) })
		for _, p := range ps[:min(3, len(ps))] {
			t.Logf("slow PUT %s: started %s after the run's start, took %s (%d attempts)", p.Key, describe(p.Start.Sub(r.Start)), describe(p.Wait), p.Attempts)
		}
	}
	okShells := 0
	for _, r := range shellRuns {
		if r.err == nil {
			okShells++
		}
	}
	record(t, "raftless-masters", map[string]any{
		"uploads": check.Uploads, "assigns": check.Assigned, "keys_issued_twice": check.IssuedTwice, "read_back": check.ReadBack,
		"failed_uploads": check.Failed, "s3_objects": objCheck.Acked, "s3_read_back": objCheck.ReadBack, "s3_deleted": len(deleted),
		"filer_files": fileCheck.Acked, "filer_read_back": fileCheck.ReadBack,
		"longest_wait_through_a_kill_ms": worst.Milliseconds(), "longest_per_kill": during,
		"shell_runs": len(shellRuns), "shell_runs_ok": okShells, "lock_grants": lockGrants, "vacuum_grants": vacuumGrants,
		"paused_ms": resumedAt.Sub(pausedAt).Milliseconds(), "paused_shell_token": held.Token, "second_shell_token": last.Token,
		"paused_shell_after_resume": strings.TrimSpace(first.out),
	})
	t.Logf("longest wait through each kill and restart:\n%s", strings.Join(during, "\n"))
	require.Positive(okShells, "no shell run got through")
	// A kill costs a client one retry to the next master: no wait near an
	// election's (stock about 16 s). 3x the bench's 1 s mark, for a loaded
	// shared machine; make bench-weed measures it.
	require.LessOrEqual(worst, 3*time.Second, "a client waited for a master")
}

// chainHeight is the chain's last accepted height now.
func chainHeight(t *testing.T) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := router(t).GetNode(ctx)
	require.NoError(t, err)
	return n.Height
}

func httpOf(addr string) string {
	if i := strings.LastIndexByte(addr, '.'); i > strings.LastIndexByte(addr, ':') {
		return addr[:i]
	}
	return addr
}

// s3Store is objload.Store through minio-go, the S3 client.
type s3Store struct {
	c      *minio.Client
	bucket string
}

func newS3Store(t *testing.T, endpoint, bucket string) *s3Store {
	t.Helper()
	minio.MaxRetry = 1 // objload retries, and measures each attempt
	c, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4("raftless", "raftless-secret", ""), Region: "us-east-1"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}))
	return &s3Store{c: c, bucket: bucket}
}

func (s *s3Store) Put(ctx context.Context, key string, body []byte) error {
	_, err := s.c.PutObject(ctx, s.bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return err
}

func (s *s3Store) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err == nil {
		var b []byte
		if b, err = io.ReadAll(o); err == nil {
			return b, nil
		}
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, fmt.Errorf("%w: %s", objload.ErrNotFound, key)
	}
	return nil, err
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	return s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
}

// objects runs objload in the background until stop.
type objectWriters struct {
	r      *objload.Runner
	cancel context.CancelFunc
	done   chan objload.Result
}

func startObjects(t *testing.T, store objload.Store, name string, workers int) *objectWriters {
	t.Helper()
	cfg := objload.DefaultConfig(name)
	cfg.Workers = workers
	r, err := objload.New(store, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	o := &objectWriters{r: r, cancel: cancel, done: make(chan objload.Result, 1)}
	go func() { o.done <- r.Run(ctx) }()
	t.Cleanup(func() { o.stop() })
	return o
}

func (o *objectWriters) stop() objload.Result {
	o.cancel()
	res := <-o.done
	o.done <- res
	return res
}

func lastObjectFailures(res objload.Result) []objload.Failure {
	if n := len(res.Failures); n > 5 {
		return res.Failures[n-5:]
	}
	return res.Failures
}

// deletes removes every fourth acknowledged S3 object as the run goes,
// which leaves garbage in the volumes for volume.vacuum to compact.
type deletes struct {
	stopc chan struct{}
	done  chan map[string]bool
}

func startDeletes(t *testing.T, s3 *s3Store, o *objectWriters) *deletes {
	d := &deletes{stopc: make(chan struct{}), done: make(chan map[string]bool, 1)}
	go func() {
		gone := map[string]bool{}
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-d.stopc:
				d.done <- gone
				return
			case <-tick.C:
			}
			for i, p := range o.r.Snapshot().Puts {
				if i%4 != 0 || gone[p.Key] {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := s3.Delete(ctx, p.Key); err == nil {
					gone[p.Key] = true
				}
				cancel()
			}
		}
	}()
	t.Cleanup(func() { d.stop() })
	return d
}

// stop ends the deletes (idempotent) and returns the deleted keys.
func (d *deletes) stop() map[string]bool {
	select {
	case <-d.stopc:
	default:
		close(d.stopc)
	}
	gone := <-d.done
	d.done <- gone
	return gone
}

// shellRun is one `weed shell` run: its output and how it ended.
type shellRun struct {
	at  time.Time
	out string
	err error
}

// runShell runs commands in one `weed shell` session through master (an
// address of the cluster's masters).
func runShell(t *testing.T, c *cluster.Cluster, master string, commands ...string) shellRun {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Weed(), "shell", "-master="+peerOf(c, master))
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	r := shellRun{at: time.Now(), out: string(out), err: err}
	if err == nil && shellFailed(r.out) {
		r.err = errors.New("a command failed")
	}
	return r
}

// shellFailed: weed shell prints a command's error and goes on.
func shellFailed(out string) bool {
	return strings.Contains(out, "error: ") || strings.Contains(out, "need to run \"lock\"")
}

// peerOf is master's address as -master takes it (ip:http.grpc).
func peerOf(c *cluster.Cluster, master string) string {
	for _, p := range strings.Split(c.Peers(), ",") {
		if httpOf(p) == master {
			return p
		}
	}
	return master
}

// shellLoop runs `weed shell` through the whole master list again and
// again: lock, volume.list, volume.vacuum, unlock.
type shellLoop struct {
	stopc chan struct{}
	done  chan []shellRun
}

func startShellLoop(t *testing.T, c *cluster.Cluster) *shellLoop {
	l := &shellLoop{stopc: make(chan struct{}), done: make(chan []shellRun, 1)}
	go func() {
		var runs []shellRun
		for {
			select {
			case <-l.stopc:
				l.done <- runs
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, c.Weed(), "shell", "-master="+c.Peers())
			cmd.Stdin = strings.NewReader("lock\nvolume.list\nvolume.vacuum -garbageThreshold 0.0001\nunlock\n")
			out, err := cmd.CombinedOutput()
			cancel()
			r := shellRun{at: time.Now(), out: string(out), err: err}
			if err == nil && shellFailed(r.out) {
				r.err = errors.New("a command failed")
			}
			runs = append(runs, r)
		}
	}()
	t.Cleanup(func() { l.stop() })
	return l
}

func (l *shellLoop) stop() []shellRun {
	select {
	case <-l.stopc:
	default:
		close(l.stopc)
	}
	runs := <-l.done
	l.done <- runs
	return runs
}

// shell is a `weed shell` session the test feeds line by line.
type shell struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bytes.Buffer
	cancel context.CancelFunc
	once   sync.Once
	result shellRun
}

func startShell(t *testing.T, c *cluster.Cluster, master string) *shell {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	s := &shell{t: t, cmd: exec.CommandContext(ctx, c.Weed(), "shell", "-master="+peerOf(c, master)), out: &bytes.Buffer{}, cancel: cancel}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	in, err := s.cmd.StdinPipe()
	require.NoError(t, err)
	s.in = in
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() { s.close() })
	return s
}

func (s *shell) send(lines ...string) {
	_, err := io.WriteString(s.in, strings.Join(lines, "\n")+"\n")
	require.NoError(s.t, err)
}

// close ends the session (stdin closed) and returns what it printed.
func (s *shell) close() shellRun {
	s.once.Do(func() {
		_ = s.in.Close()
		err := s.cmd.Wait()
		s.cancel()
		s.result = shellRun{at: time.Now(), out: s.out.String(), err: err}
	})
	return s.result
}

// leaseState is a range's lease as the chain reports it.
type leaseState struct {
	Held   bool
	Holder string
	Token  uint64
}

// waitLease polls rng's lease until cond holds.
func waitLease(t *testing.T, rng string, cond func(leaseState) bool) leaseState {
	t.Helper()
	r := router(t)
	var last leaseState
	waitFor(t, time.Minute, "lease "+rng, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := r.GetLease(ctx, rng)
		if err != nil {
			return false
		}
		last = leaseState{Held: l.Held, Holder: l.Holder, Token: l.Token}
		return cond(last)
	})
	return last
}

// holding is one grant of a lease as the chain decided it: from the time
// of the block that granted it to the expiry its last renewal gave it, or
// the block that released it.
type holding struct {
	Holder      string
	Token       uint64
	From, Until uint64 // block time, unix ms
}

// history is every grant of the ranges under a prefix, by range, in order.
type history map[string][]*holding

func (h history) grants(rng string) int { return len(h[rng]) }

// overlaps names the first two grants of one range that held at once.
func (h history) overlaps() error {
	for rng, hs := range h {
		for i := 1; i < len(hs); i++ {
			if hs[i].From < hs[i-1].Until {
				return fmt.Errorf("%s: token %d of %s from %d while token %d of %s held until %d",
					rng, hs[i].Token, hs[i].Holder, hs[i].From, hs[i-1].Token, hs[i-1].Holder, hs[i-1].Until)
			}
		}
	}
	return nil
}

// leaseHistory reads the chain's blocks from height from on and rebuilds,
// from the receipts of their lease transactions, every grant of the ranges
// under prefix.
func leaseHistory(t *testing.T, from uint64, prefix string) history {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := router(t)
	n, err := r.GetNode(ctx)
	require.NoError(t, err)
	h := history{}
	require.NoError(t, localnettest.EachTx(ctx, r, from, n.Height, func(blk *block.Block, tx *txs.Tx, rc *api.ReceiptReply) {
		if _, ok := tx.Unsigned.(*txs.LeaseTx); !ok {
			return
		}
		for _, e := range rc.Entries {
			if strings.HasPrefix(e.Range, prefix) {
				h.apply(e, blk.Timestamp)
			}
		}
	}))
	return h
}

func (h history) apply(e api.ReceiptEntry, at uint64) {
	hs := h[e.Range]
	var cur *holding
	if len(hs) > 0 {
		cur = hs[len(hs)-1]
	}
	switch state.LeaseOutcome(e.Lease) {
	case state.LeaseGranted:
		h[e.Range] = append(hs, &holding{Holder: e.Holder, Token: e.Token, From: at, Until: e.ExpiresMs})
	case state.LeaseRenewed:
		if cur != nil && cur.Token == e.Token {
			cur.Until = e.ExpiresMs
		}
	case state.LeaseReleased:
		if cur != nil {
			cur.Until = min(cur.Until, at)
		}
	}
}

// TestLeaseCLI: `schain lease` acquires, shows, renews and releases a lease
// on the network, and a second holder is refused with the holder named.
func TestLeaseCLI(t *testing.T) {
	require := require.New(t)
	rng := prefix(t) + "/lock/cli"
	run := func(want int, args ...string) map[string]any {
		t.Helper()
		base := []string{"--rpc", strings.Join(network.ChainURIsBase(), ","), "--chain", network.ChainID.String(),
			"--token-file", network.TokenPath(), "--json", "lease"}
		cmd := exec.Command(filepath.Join(buildDir(), "schain"), append(base, args...)...)
		out, err := cmd.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(err)
		}
		require.Equal(want, code, "schain lease %v: %s", args, out)
		var v map[string]any
		require.NoError(json.Unmarshal(out, &v), "%s", out)
		return v
	}
	got := run(0, "acquire", rng, "--holder", "cli-a", "--ttl", "30s")
	require.Equal("granted", got["outcome"])
	token := fmt.Sprint(got["token"])
	shown := run(0, "show", rng)
	require.Equal(true, shown["held"])
	require.Equal("cli-a", shown["holder"])
	held := run(5, "acquire", rng, "--holder", "cli-b", "--ttl", "30s")
	require.Contains(fmt.Sprint(held), "cli-a", "the refusal names the holder")
	require.Equal("renewed", run(0, "renew", rng, "--holder", "cli-a", "--token", token, "--ttl", "30s")["outcome"])
	run(3, "renew", rng, "--holder", "cli-b", "--token", token, "--ttl", "30s")
	require.Equal("released", run(0, "release", rng, "--holder", "cli-a", "--token", token)["outcome"])
	require.Equal(false, run(0, "show", rng)["held"])
}
