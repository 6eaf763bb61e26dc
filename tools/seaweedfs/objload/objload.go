// Package objload writes objects through a SeaweedFS gateway (the S3
// gateway, or a filer) the way an application does, one object at a time
// per worker, retrying a failed PUT until it is acknowledged or its bound
// runs out, and keeps the evidence: every acknowledged object with its
// content's hash and how long its PUT took, and every failed attempt.
// Verify reads every acknowledged object back.
//
// The end-to-end tests drive it with a real S3 client; the benchmark with
// S3's unsigned HTTP form (S3), and filers with Filer.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package objload

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Store is where objects go: an S3 bucket, a filer directory.
type Store interface {
	Put(ctx context.Context, key string, body []byte) error
	// Get returns ErrNotFound for an object that is not there.
	Get(ctx context.Context, key string) ([]byte, error)
}

// ErrNotFound: the object is not in the store.
var ErrNotFound = errors.New("object not found")

// Config shapes the writes.
type Config struct {
	// Workers write concurrently, each one object at a time.
	Workers int
	// Size is each object's size in bytes.
	Size int
	// PutTimeout bounds one object's PUT, retries included; an object not
	// acknowledged by then failed.
	PutTimeout time.Duration
	// Retry is the pause after a failed attempt.
	Retry time.Duration
	// Prefix starts every key (the run's name).
	Prefix string
}

// DefaultConfig writes 2 KiB objects with 8 workers.
func DefaultConfig(prefix string) Config {
	return Config{Workers: 8, Size: 2048, PutTimeout: time.Minute, Retry: 50 * time.Millisecond, Prefix: prefix}
}

// Put is one acknowledged object.
type Put struct {
	Key  string   `json:"key"`
	Hash [32]byte `json:"-"`
	// Start is when its PUT began, Done when it was acknowledged; Wait is
	// Done-Start, retries included.
	Start    time.Time     `json:"start"`
	Done     time.Time     `json:"done"`
	Wait     time.Duration `json:"wait_ns"`
	Attempts int           `json:"attempts"`
}

// Failure is a failed attempt (Final: the object gave up).
type Failure struct {
	At    time.Time `json:"at"`
	Key   string    `json:"key"`
	Final bool      `json:"final"`
	Err   string    `json:"error"`
}

// Result is what a run produced.
type Result struct {
	Start, End time.Time
	Puts       []Put
	Failures   []Failure
	// Cut are the starts of PUTs the run's end cut short: neither
	// acknowledged nor failed, they had waited End-start by then.
	Cut []time.Time
}

// Runner writes until its context ends. Run may be called once.
type Runner struct {
	cfg   Config
	store Store

	mu  sync.Mutex // guards res
	res Result
}

// New checks cfg and returns a runner writing to store.
func New(store Store, cfg Config) (*Runner, error) {
	if cfg.Workers < 1 || cfg.Size < 1 || cfg.PutTimeout <= 0 || cfg.Retry <= 0 || cfg.Prefix == "" {
		return nil, fmt.Errorf("objload: workers, size, timeouts and a prefix are required: %+v", cfg)
	}
	return &Runner{cfg: cfg, store: store}, nil
}

// Run writes with cfg.Workers workers until ctx ends and returns the
// evidence. An attempt in flight when ctx ends runs to its answer (within
// the object's bound), so that every object the store committed on an
// answered attempt is acknowledged: what a listing shows afterwards is
// exactly the acknowledged objects, and those of attempts that failed.
func (r *Runner) Run(ctx context.Context) Result {
	r.mu.Lock()
	r.res.Start = time.Now()
	r.mu.Unlock()
	var wg sync.WaitGroup
	for w := range r.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				r.one(ctx, fmt.Sprintf("%s/w%02d/%06d", r.cfg.Prefix, w, i))
			}
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.End = time.Now()
	return r.copyLocked()
}

// one PUTs key until it is acknowledged, its bound runs out or ctx ends.
func (r *Runner) one(ctx context.Context, key string) {
	body := make([]byte, r.cfg.Size)
	_, _ = rand.Read(body)
	start := time.Now()
	deadline := start.Add(r.cfg.PutTimeout)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		err := r.store.Put(actx, key, body)
		cancel()
		if err == nil {
			done := time.Now()
			r.mu.Lock()
			r.res.Puts = append(r.res.Puts, Put{Key: key, Hash: sha256.Sum256(body), Start: start, Done: done, Wait: done.Sub(start), Attempts: attempt})
			r.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			r.cut(start)
			return
		}
		final := time.Now().Add(r.cfg.Retry).After(deadline)
		r.mu.Lock()
		r.res.Failures = append(r.res.Failures, Failure{At: time.Now(), Key: key, Final: final, Err: err.Error()})
		r.mu.Unlock()
		if final {
			return
		}
		t := time.NewTimer(r.cfg.Retry)
		select {
		case <-ctx.Done():
			t.Stop()
			r.cut(start)
			return
		case <-t.C:
		}
	}
}

func (r *Runner) cut(start time.Time) {
	r.mu.Lock()
	r.res.Cut = append(r.res.Cut, start)
	r.mu.Unlock()
}

// Snapshot is the evidence so far.
func (r *Runner) Snapshot() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copyLocked()
}

func (r *Runner) copyLocked() Result {
	out := r.res
	out.Puts, out.Failures, out.Cut = slices.Clone(r.res.Puts), slices.Clone(r.res.Failures), slices.Clone(r.res.Cut)
	return out
}

// AckedSince counts objects acknowledged after t.
func (res Result) AckedSince(t time.Time) int {
	n := 0
	for _, p := range res.Puts {
		if p.Done.After(t) {
			n++
		}
	}
	return n
}

// Longest is the longest any PUT in flight at some time in [from, to]
// waited, counted from from for one already in flight then (what a kill at
// from made it wait, not what it waited before), a PUT the run's end cut
// counting as waiting until the end.
func (res Result) Longest(from, to time.Time) time.Duration {
	var d time.Duration
	for _, p := range res.Puts {
		if p.Done.After(from) && p.Start.Before(to) {
			d = max(d, p.Done.Sub(later(p.Start, from)))
		}
	}
	for _, start := range res.Cut {
		if start.Before(to) {
			d = max(d, res.End.Sub(later(start, from)))
		}
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// FinalFailures counts objects that gave up.
func (res Result) FinalFailures() int {
	n := 0
	for _, f := range res.Failures {
		if f.Final {
			n++
		}
	}
	return n
}

// Check is what reading every acknowledged object back found.
type Check struct {
	Acked    int `json:"acked"`
	ReadBack int `json:"read_back"`
	// Lost objects are not in the store; Altered ones read back other
	// bytes; Unread ones could not be read (the store failed).
	Lost    int      `json:"lost"`
	Altered int      `json:"altered"`
	Unread  int      `json:"unread"`
	Errors  []string `json:"errors,omitempty"`
}

// Err is nil when every acknowledged object read back intact.
func (c Check) Err() error {
	if c.Lost+c.Altered+c.Unread == 0 {
		return nil
	}
	return fmt.Errorf("of %d acknowledged objects: %d lost, %d altered, %d unreadable (first: %v)", c.Acked, c.Lost, c.Altered, c.Unread, c.Errors)
}

// Verify reads every acknowledged object of res back from store, workers at
// a time.
func Verify(ctx context.Context, store Store, res Result, workers int) Check {
	c := Check{Acked: len(res.Puts)}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		next = make(chan Put)
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				b, err := store.Get(ctx, p.Key)
				mu.Lock()
				switch {
				case errors.Is(err, ErrNotFound):
					c.Lost++
				case err != nil:
					c.Unread++
				case sha256.Sum256(b) != p.Hash:
					c.Altered++
					err = fmt.Errorf("%s: %d bytes, other content", p.Key, len(b))
				default:
					c.ReadBack++
				}
				if err != nil && len(c.Errors) < 5 {
					c.Errors = append(c.Errors, fmt.Sprintf("%s: %v", p.Key, err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range res.Puts {
		next <- p
	}
	close(next)
	wg.Wait()
	return c
}

// HTTPStore PUTs and GETs objects at URL + "/" + key: an S3 bucket in its
// unsigned form (a gateway without identities: URL http://host:port/bucket)
// or a filer directory (http://host:port/dir).
type HTTPStore struct {
	URL    string
	Client *http.Client
}

// NewHTTPStore returns a store at url with its own connection pool.
func NewHTTPStore(url string) *HTTPStore {
	return &HTTPStore{URL: url, Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, Proxy: nil}}}
}

// Put writes body at key.
func (s *HTTPStore) Put(ctx context.Context, key string, body []byte) error {
	return s.put(ctx, key, body, false)
}

// ErrPreconditionFailed: an exclusive create found the key taken (HTTP
// 412).
var ErrPreconditionFailed = errors.New("precondition failed")

// PutIfAbsent writes body at key only if no object is there
// (If-None-Match: *): ErrPreconditionFailed if one is.
func (s *HTTPStore) PutIfAbsent(ctx context.Context, key string, body []byte) error {
	return s.put(ctx, key, body, true)
}

func (s *HTTPStore) put(ctx context.Context, key string, body []byte, exclusive bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.URL+"/"+key, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	if exclusive {
		req.Header.Set("If-None-Match", "*")
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: PUT %s", ErrPreconditionFailed, key)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("PUT %s: HTTP %d: %s", key, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// Get reads key.
func (s *HTTPStore) Get(ctx context.Context, key string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/"+key, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: HTTP %d: %.200s", key, resp.StatusCode, b)
	}
	return b, err
}

// CreateBucket makes an S3 bucket in its unsigned form (PUT /bucket); an
// existing one is fine.
func CreateBucket(ctx context.Context, endpoint, bucket string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+endpoint+"/"+bucket, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 && !bytes.Contains(msg, []byte("BucketAlreadyOwnedByYou")) && !bytes.Contains(msg, []byte("BucketAlreadyExists")) {
		return fmt.Errorf("creating bucket %s: HTTP %d: %s", bucket, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
