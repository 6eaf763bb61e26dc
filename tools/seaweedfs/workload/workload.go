// Package workload uploads files through SeaweedFS masters the way a
// client does (assign at the masters, trying the next one on failure; write
// to the volume server the answer names) and keeps the evidence: every key
// the masters handed out, every acknowledged upload with its content's hash,
// every failure, and the waits. Check then counts keys issued twice and
// reads every acknowledged upload back.
//
// The end-to-end tests, the demo and the benchmark run it against clusters
// in each sequencer mode and through master and validator kills.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package workload

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/operator/shadow/seaweed"
)

// Config shapes the uploads.
type Config struct {
	// Masters are the masters' HTTP addresses.
	Masters []string
	// Collection the files go to.
	Collection string
	// Workers upload concurrently, each one file at a time.
	Workers int
	// Size is each file's size in bytes (at least 16).
	Size int
	// UploadTimeout bounds one upload, retries included; an upload not
	// acknowledged by then failed.
	UploadTimeout time.Duration
	// Retry is the pause after a failed attempt.
	Retry time.Duration
	// AssignOnly skips the writes (an assign benchmark).
	AssignOnly bool
	// MaxUploads stops the run after this many acknowledged uploads (0:
	// until the context ends).
	MaxUploads int
	// Spread sends each assign to the next master in turn and, when it
	// fails (unreachable, warming up, any error), to the one after at once:
	// a client of leaderless masters, any of which assigns. Otherwise
	// assigns go to the leader first (SeaweedFS's client with a leader).
	Spread bool
}

// DefaultConfig uploads 1 KiB files with 8 workers.
func DefaultConfig(masters []string, collection string) Config {
	return Config{Masters: masters, Collection: collection, Workers: 8, Size: 1024, UploadTimeout: time.Minute, Retry: 100 * time.Millisecond}
}

// Upload is one acknowledged upload.
type Upload struct {
	Fid    string   `json:"fid"`
	Volume uint32   `json:"volume"`
	Key    uint64   `json:"key"`
	URL    string   `json:"url"`
	Hash   [32]byte `json:"-"`
	Size   int      `json:"size"`
	Master string   `json:"master"`
	// Start is when the upload began, Done when it was acknowledged; Wait
	// is Done-Start (retries included).
	Start time.Time     `json:"start"`
	Done  time.Time     `json:"done"`
	Wait  time.Duration `json:"wait_ns"`
}

// Assigned is one assign answer (acknowledged or not).
type Assigned struct {
	Volume uint32    `json:"volume"`
	Key    uint64    `json:"key"`
	Count  uint64    `json:"count"`
	At     time.Time `json:"at"`
	Master string    `json:"master"`
}

// Failure is a failed attempt (Final: the upload gave up).
type Failure struct {
	At    time.Time `json:"at"`
	Stage string    `json:"stage"` // "assign" or "write"
	// Volume is the volume concerned: the assigned one for a write, the
	// one the master's error names for an assign (0 when it names none).
	Volume uint32 `json:"volume"`
	Final  bool   `json:"final"`
	Err    string `json:"error"`
}

// Result is what a run produced.
type Result struct {
	Start, End time.Time
	Uploads    []Upload
	Assigned   []Assigned
	Failures   []Failure
	// Abandoned uploads were cut by the run's end, not failed.
	Abandoned int
}

// Runner uploads until its context ends. Run may be called once.
type Runner struct {
	cfg    Config
	client *seaweed.Client
	hc     *http.Client
	seq    atomic.Uint64
	turn   atomic.Uint64 // the next master of a spread assign

	mu  sync.Mutex // guards res
	res Result
}

// New checks cfg and returns a runner.
func New(cfg Config) (*Runner, error) {
	if len(cfg.Masters) == 0 || cfg.Collection == "" || cfg.Workers < 1 || cfg.Size < 16 || cfg.UploadTimeout <= 0 || cfg.Retry <= 0 {
		return nil, fmt.Errorf("workload: invalid config %+v", cfg)
	}
	sc := seaweed.DefaultConfig(cfg.Masters...)
	sc.RequestTimeout, sc.DialTimeout, sc.LeaderRefresh = 12*time.Second, 500*time.Millisecond, 500*time.Millisecond
	client, err := seaweed.New(sc)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, client: client, hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}, nil
}

// Run uploads with cfg.Workers workers until ctx ends, and returns the
// evidence.
func (r *Runner) Run(ctx context.Context) Result {
	r.mu.Lock()
	r.res.Start = time.Now()
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r.upload(ctx)
				if r.cfg.MaxUploads > 0 && r.acked() >= r.cfg.MaxUploads {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.End = time.Now()
	return r.snapshot()
}

// Snapshot returns the evidence so far (safe during Run).
func (r *Runner) Snapshot() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot()
}

func (r *Runner) snapshot() Result {
	out := r.res
	out.Uploads = slices.Clone(r.res.Uploads)
	out.Assigned = slices.Clone(r.res.Assigned)
	out.Failures = slices.Clone(r.res.Failures)
	return out
}

// Close releases connections.
func (r *Runner) Close() { r.client.Close() }

var volumeInError = regexp.MustCompile(`volume (\d+)`)

// upload runs one upload to its end: acknowledged, failed, or cut by ctx.
func (r *Runner) upload(ctx context.Context) {
	start := time.Now()
	content := r.content()
	uctx, cancel := context.WithTimeout(ctx, r.cfg.UploadTimeout)
	defer cancel()
	var last Failure
	for {
		a, err := r.assign(uctx)
		if err == nil {
			r.record(func(res *Result) {
				res.Assigned = append(res.Assigned, Assigned{Volume: a.FileID.Volume, Key: a.FileID.Key, Count: a.Count, At: time.Now(), Master: a.Master})
			})
			if r.cfg.AssignOnly {
				r.ack(Upload{Fid: a.FileID.String(), Volume: a.FileID.Volume, Key: a.FileID.Key, Master: a.Master, Start: start, Done: time.Now()})
				return
			}
			err = r.write(uctx, a, content)
			if err == nil {
				r.ack(Upload{Fid: a.FileID.String(), Volume: a.FileID.Volume, Key: a.FileID.Key, URL: a.URL,
					Hash: sha256.Sum256(content), Size: len(content), Master: a.Master, Start: start, Done: time.Now()})
				return
			}
			last = Failure{Stage: "write", Volume: a.FileID.Volume, Err: err.Error()}
		} else {
			last = Failure{Stage: "assign", Err: err.Error()}
			if m := volumeInError.FindStringSubmatch(err.Error()); m != nil {
				v, _ := strconv.ParseUint(m[1], 10, 32)
				last.Volume = uint32(v)
			}
		}
		if ctx.Err() != nil { // the run ended, not the upload
			r.record(func(res *Result) { res.Abandoned++ })
			return
		}
		last.At = time.Now()
		if uctx.Err() != nil {
			last.Final = true
			r.record(func(res *Result) { res.Failures = append(res.Failures, last) })
			return
		}
		r.record(func(res *Result) { res.Failures = append(res.Failures, last) })
		t := time.NewTimer(r.cfg.Retry)
		select {
		case <-uctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// assign asks the leader first, or with Spread the masters in turn.
func (r *Runner) assign(ctx context.Context) (seaweed.Assignment, error) {
	if !r.cfg.Spread {
		return r.client.Assign(ctx, r.cfg.Collection, 1)
	}
	first := int(r.turn.Add(1))
	var errs []error
	for i := range r.cfg.Masters {
		m := r.cfg.Masters[(first+i)%len(r.cfg.Masters)]
		a, err := r.client.AssignAt(ctx, m, r.cfg.Collection, 1)
		if err == nil {
			return a, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return seaweed.Assignment{}, errors.Join(errs...)
}

func (r *Runner) acked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.res.Uploads)
}

func (r *Runner) record(f func(*Result)) {
	r.mu.Lock()
	f(&r.res)
	r.mu.Unlock()
}

func (r *Runner) ack(u Upload) {
	u.Wait = u.Done.Sub(u.Start)
	r.record(func(res *Result) { res.Uploads = append(res.Uploads, u) })
}

// content is a file body unique to this upload: a sequence number, then
// random bytes.
func (r *Runner) content() []byte {
	b := make([]byte, r.cfg.Size)
	binary.BigEndian.PutUint64(b, r.seq.Add(1))
	_, _ = rand.Read(b[8:])
	return b
}

// write PUTs content at the assigned fid on its volume server.
func (r *Runner) write(ctx context.Context, a seaweed.Assignment, content []byte) error {
	return seaweed.Write(ctx, r.hc, a.URL, a.FileID, content)
}

// Check is what the evidence shows.
type Check struct {
	Uploads  int `json:"uploads"`
	Assigned int `json:"assigned"`
	// IssuedTwice counts (volume, key) pairs handed out by more than one
	// assign: two clients could write the same file id.
	IssuedTwice int `json:"issued_twice"`
	// GlobalKeysTwice counts keys handed out twice on any volumes (the
	// stock sequencer's keys are global; S-Chain's are per volume range,
	// where this is expected and harmless).
	GlobalKeysTwice int `json:"global_keys_twice"`
	// Examples of keys issued twice.
	Examples []string `json:"examples,omitempty"`
	// ReadBack: acknowledged uploads read back; Lost could not be read;
	// Altered read back other bytes.
	ReadBack int      `json:"read_back"`
	Lost     int      `json:"lost"`
	Altered  int      `json:"altered"`
	Bad      []string `json:"bad,omitempty"`
	// Failed uploads gave up; FailedAttempts are all failed attempts.
	Failed         int `json:"failed"`
	FailedAttempts int `json:"failed_attempts"`
	Abandoned      int `json:"abandoned"`
	// LongestWait is the longest acknowledged upload (retries included);
	// LongestGap the longest time without any acknowledgement between the
	// first and the last.
	LongestWait time.Duration `json:"longest_wait_ns"`
	LongestGap  time.Duration `json:"longest_gap_ns"`
}

// Duplicates counts keys issued twice in res: per (volume, key), and per
// key over all volumes.
func Duplicates(assigned []Assigned) (perVolume, global int, examples []string) {
	type vk struct {
		v uint32
		k uint64
	}
	seen := make(map[vk]bool, len(assigned))
	seenKey := make(map[uint64]bool, len(assigned))
	for _, a := range assigned {
		for i := range max(a.Count, 1) {
			k := a.Key + i
			if seen[vk{a.Volume, k}] {
				perVolume++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%d,%x (from %s at %s)", a.Volume, k, a.Master, a.At.Format("15:04:05.000")))
				}
			}
			seen[vk{a.Volume, k}] = true
			if seenKey[k] {
				global++
			}
			seenKey[k] = true
		}
	}
	return perVolume, global, examples
}

// Verify checks res: keys issued twice, and every acknowledged upload read
// back from its volume server (concurrently, until ctx ends).
func Verify(ctx context.Context, res Result) Check {
	c := Check{Uploads: len(res.Uploads), Assigned: len(res.Assigned), Abandoned: res.Abandoned}
	c.IssuedTwice, c.GlobalKeysTwice, c.Examples = Duplicates(res.Assigned)
	for _, f := range res.Failures {
		c.FailedAttempts++
		if f.Final {
			c.Failed++
		}
	}
	c.LongestWait, c.LongestGap = waits(res)
	if len(res.Uploads) > 0 && res.Uploads[0].URL == "" {
		return c // assign only: nothing to read
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer hc.CloseIdleConnections()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(res.Uploads) || ctx.Err() != nil {
					return
				}
				u := res.Uploads[i]
				got, err := read(ctx, hc, u)
				mu.Lock()
				switch {
				case err != nil:
					c.Lost++
					if len(c.Bad) < 5 {
						c.Bad = append(c.Bad, fmt.Sprintf("%s: %v", u.Fid, err))
					}
				case sha256.Sum256(got) != u.Hash:
					c.Altered++
					if len(c.Bad) < 5 {
						c.Bad = append(c.Bad, fmt.Sprintf("%s: %d bytes read, other content than written", u.Fid, len(got)))
					}
				default:
					c.ReadBack++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return c
}

func read(ctx context.Context, hc *http.Client, u Upload) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+u.URL+"/"+u.Fid, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(u.Size)+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return b, nil
}

// waits returns the longest upload and the longest time between two
// acknowledgements.
func waits(res Result) (longest, gap time.Duration) {
	done := make([]time.Time, 0, len(res.Uploads))
	for _, u := range res.Uploads {
		longest = max(longest, u.Wait)
		done = append(done, u.Done)
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Before(done[j]) })
	for i := 1; i < len(done); i++ {
		gap = max(gap, done[i].Sub(done[i-1]))
	}
	return longest, gap
}

// ErrCheck is returned by Check.Err when the evidence shows a defect.
var ErrCheck = errors.New("workload check failed")

// Err is nil when no key was issued twice and every acknowledged upload
// read back intact.
func (c Check) Err() error {
	if c.IssuedTwice > 0 || c.Lost > 0 || c.Altered > 0 {
		return fmt.Errorf("%w: %d keys issued twice %v, %d uploads lost, %d altered %v", ErrCheck, c.IssuedTwice, c.Examples, c.Lost, c.Altered, c.Bad)
	}
	return nil
}

// String summarises the check on one line.
func (c Check) String() string {
	return fmt.Sprintf("%d uploads acknowledged (%d assigns), %d keys issued twice (%d keys on several volumes), %d read back intact, %d lost, %d altered, %d failed (%d failed attempts, %d cut by the run's end), longest upload %v, longest gap %v",
		c.Uploads, c.Assigned, c.IssuedTwice, c.GlobalKeysTwice, c.ReadBack, c.Lost, c.Altered, c.Failed, c.FailedAttempts, c.Abandoned,
		c.LongestWait.Round(time.Millisecond), c.LongestGap.Round(time.Millisecond))
}
