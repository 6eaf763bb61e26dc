package seaweed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var _ legacy.Allocator = (*Client)(nil)

var (
	errNoMasters  = errors.New("no master addresses")
	errBadMaster  = errors.New("master address must be host:port")
	errBadTimeout = errors.New("timeouts and refresh interval must be positive")
	errBadMax     = errors.New("max count must be positive")
)

// maxAnswerBytes bounds how much of a master's answer is read.
const maxAnswerBytes = 64 << 10

// Config configures a Client. Start from DefaultConfig.
type Config struct {
	// Masters are the masters' HTTP addresses (host:port), tried in this
	// order after the known leader.
	Masters []string `json:"masters"`
	// RequestTimeout bounds one HTTP exchange with one master. The master
	// itself waits up to 10 s for volume growth before answering.
	RequestTimeout time.Duration `json:"request-timeout"`
	// DialTimeout bounds connecting to one master, so a dead master costs
	// little before the next is tried.
	DialTimeout time.Duration `json:"dial-timeout"`
	// LeaderRefresh is how old the known leader identity may get before
	// /cluster/status is read again; any unavailability refreshes it at
	// once. Keep it well below the master's warm-up (about 15 s) so that
	// assignments of a new leader are attributed to it.
	LeaderRefresh time.Duration `json:"leader-refresh"`
	// MaxCount caps one request's count; larger requests are rejected
	// without contacting a master.
	MaxCount uint64 `json:"max-count"`
	// Replication, if set, is the replica placement assigns ask for
	// ("001": a second copy on another volume server of the rack): the
	// volume server then acknowledges a write once every copy holds it.
	Replication string `json:"replication,omitempty"`
}

// DefaultConfig returns timeouts suited to masters on a LAN.
func DefaultConfig(masters ...string) Config {
	return Config{
		Masters:        masters,
		RequestTimeout: 5 * time.Second,
		DialTimeout:    time.Second,
		LeaderRefresh:  time.Second,
		MaxCount:       1 << 20,
	}
}

// Validate checks the configuration; New calls it.
func (c Config) Validate() error {
	if len(c.Masters) == 0 {
		return errNoMasters
	}
	for _, m := range c.Masters {
		if host, port, err := net.SplitHostPort(m); err != nil || host == "" || port == "" {
			return fmt.Errorf("%w: %q", errBadMaster, m)
		}
	}
	if c.RequestTimeout <= 0 || c.DialTimeout <= 0 || c.LeaderRefresh <= 0 {
		return errBadTimeout
	}
	if c.MaxCount == 0 {
		return errBadMax
	}
	return nil
}

// Assignment is one successful /dir/assign answer: Count keys starting at
// FileID.Key, on the volume server at URL.
type Assignment struct {
	FileID    FileID `json:"fid"`
	URL       string `json:"url"`
	PublicURL string `json:"public_url"`
	Count     uint64 `json:"count"`
	// Master is the address that answered (the leader, or a follower that
	// proxied to it).
	Master string `json:"master"`
	// Leader and Term are the client's view when the answer arrived; see
	// Client.Leader.
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
}

// Result converts the assignment for the comparator.
func (a Assignment) Result() legacy.Result {
	return legacy.Result{First: a.FileID.Key, Count: a.Count, Leader: a.Leader, Term: a.Term}
}

// ClusterStatus is one master's /cluster/status answer.
type ClusterStatus struct {
	IsLeader bool `json:"is_leader"`
	// Leader is the leader's HTTP address as this master knows it, empty
	// when it knows none.
	Leader      string   `json:"leader"`
	Peers       []string `json:"peers"`
	MaxVolumeID uint32   `json:"max_volume_id"`
}

// Client is a legacy.Allocator over a real SeaweedFS master cluster. It is
// safe for concurrent use.
//
// Each Allocate tries the known leader first, then every configured master
// in order, moving on only when a master is unavailable (see the Err*
// classes); a rejection is returned at once. It does not wait and retry:
// the shadow comparison must see the legacy's unavailability.
type Client struct {
	cfg Config
	hc  *http.Client

	refreshMu sync.Mutex // serialises leader refreshes

	mu        sync.Mutex // guards the fields below
	leader    string     // last leader seen, HTTP address; "" before any
	changes   uint64     // leader changes observed after the first leader
	checkedAt time.Time  // when leader was last read; zero forces a read
}

// New validates cfg and returns a client.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid seaweed config: %w", err)
	}
	cfg.Masters = slices.Clone(cfg.Masters)
	dialer := &net.Dialer{Timeout: cfg.DialTimeout}
	transport := &http.Transport{
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.RequestTimeout,
	}
	return &Client{cfg: cfg, hc: &http.Client{Transport: transport, Timeout: cfg.RequestTimeout}}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Leader returns the last leader seen and the term substitute.
//
// SeaweedFS exposes no raft term over HTTP, so the term is the number of
// leader changes this client observed, plus one: 0 before any leader was
// seen, 1 for the first leader, and one more each time /cluster/status names
// a different leader. A change that this client does not observe (a leader
// lost and regained between two reads) is not counted; with the master's
// warm-up of about 15 s after every election and LeaderRefresh well below
// it, no assignment of a new leader is attributed to the old one.
func (c *Client) Leader() (addr string, term uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader, c.termLocked()
}

func (c *Client) termLocked() uint64 {
	if c.leader == "" {
		return 0
	}
	return c.changes + 1
}

// Allocate implements legacy.Allocator: count keys in the range's
// collection (see Collection), the first being the fid's file key.
func (c *Client) Allocate(ctx context.Context, rangeKey string, count uint64) (legacy.Result, error) {
	a, err := c.Assign(ctx, rangeKey, count)
	if err != nil {
		return legacy.Result{}, err
	}
	return a.Result(), nil
}

// Assign asks the cluster for count keys in rangeKey's collection.
func (c *Client) Assign(ctx context.Context, rangeKey string, count uint64) (Assignment, error) {
	if count == 0 || count > c.cfg.MaxCount {
		return Assignment{}, fmt.Errorf("%w: %d not in [1,%d]", ErrBadCount, count, c.cfg.MaxCount)
	}
	collection, err := Collection(rangeKey)
	if err != nil {
		return Assignment{}, err
	}
	c.refreshIfStale(ctx)
	var errs []error
	for _, addr := range c.candidates() {
		a, err := c.assign(ctx, addr, collection, count)
		if err == nil {
			c.mu.Lock()
			a.Leader, a.Term = c.leader, c.termLocked()
			c.mu.Unlock()
			return a, nil
		}
		errs = append(errs, err)
		if !isUnavailable(err) || ctx.Err() != nil {
			return Assignment{}, joinAttempts(errs, len(errs)-1) // this one ended the attempts
		}
		c.invalidate()
	}
	return Assignment{}, joinAttempts(errs, firstAnswered(errs))
}

// AssignAt asks the master at addr alone for count keys in rangeKey's
// collection, whether it leads or not: for masters that all assign
// (S-Chain's leaderless masters), whose clients spread over them and try
// the next one on failure themselves.
func (c *Client) AssignAt(ctx context.Context, addr, rangeKey string, count uint64) (Assignment, error) {
	if count == 0 || count > c.cfg.MaxCount {
		return Assignment{}, fmt.Errorf("%w: %d not in [1,%d]", ErrBadCount, count, c.cfg.MaxCount)
	}
	collection, err := Collection(rangeKey)
	if err != nil {
		return Assignment{}, err
	}
	return c.assign(ctx, addr, collection, count)
}

// firstAnswered picks the error that best describes an outage: the first
// answer of a master that answered (the leader's, when it is known), else
// the last failure to reach one.
func firstAnswered(errs []error) int {
	for i, err := range errs {
		if !errors.Is(err, ErrUnreachable) {
			return i
		}
	}
	return len(errs) - 1
}

// joinAttempts returns errs[pick], which alone decides the class, with the
// other attempts' messages (not their classes) appended for investigation.
func joinAttempts(errs []error, pick int) error {
	if len(errs) == 1 {
		return errs[0]
	}
	var others []string
	for i, err := range errs {
		if i != pick {
			others = append(others, err.Error())
		}
	}
	return fmt.Errorf("%w (other masters: %s)", errs[pick], strings.Join(others, "; "))
}

// candidates lists the known leader, then the configured masters.
func (c *Client) candidates() []string {
	c.mu.Lock()
	leader := c.leader
	c.mu.Unlock()
	out := make([]string, 0, len(c.cfg.Masters)+1)
	if leader != "" {
		out = append(out, leader)
	}
	for _, m := range c.cfg.Masters {
		if m != leader {
			out = append(out, m)
		}
	}
	return out
}

func (c *Client) invalidate() {
	c.mu.Lock()
	c.checkedAt = time.Time{}
	c.mu.Unlock()
}

func (c *Client) assign(ctx context.Context, addr, collection string, count uint64) (Assignment, error) {
	q := url.Values{"count": {strconv.FormatUint(count, 10)}, "collection": {collection}, "dataSize": {"1"}}
	if c.cfg.Replication != "" {
		q.Set("replication", c.cfg.Replication)
	}
	var ans struct {
		Fid       string `json:"fid"`
		URL       string `json:"url"`
		PublicURL string `json:"publicUrl"`
		Count     uint64 `json:"count"`
		Error     string `json:"error"`
	}
	if err := c.get(ctx, addr, "/dir/assign?"+q.Encode(), &ans); err != nil {
		return Assignment{}, err
	}
	if ans.Error != "" {
		return Assignment{}, fmt.Errorf("%w: %s: %s", classify(http.StatusOK, ans.Error), addr, ans.Error)
	}
	fid, err := ParseFileID(ans.Fid)
	if err != nil {
		return Assignment{}, fmt.Errorf("%w: %s: %w", ErrMalformedAnswer, addr, err)
	}
	if ans.Count == 0 || ans.Count > count || fid.Key > ^uint64(0)-ans.Count {
		return Assignment{}, fmt.Errorf("%w: %s: count %d for %d requested at key %d", ErrMalformedAnswer, addr, ans.Count, count, fid.Key)
	}
	return Assignment{FileID: fid, URL: ans.URL, PublicURL: ans.PublicURL, Count: ans.Count, Master: addr}, nil
}

// Lookup names the volume servers (HTTP addresses) that hold volume vid,
// as the leader (or the first master that answers) knows them.
func (c *Client) Lookup(ctx context.Context, vid uint32) ([]string, error) {
	c.refreshIfStale(ctx)
	var errs []error
	for _, addr := range c.candidates() {
		var ans struct {
			Locations []struct {
				URL string `json:"url"`
			} `json:"locations"`
			Error string `json:"error"`
		}
		err := c.get(ctx, addr, "/dir/lookup?volumeId="+strconv.FormatUint(uint64(vid), 10), &ans)
		if err == nil && ans.Error != "" {
			err = fmt.Errorf("%w: %s: %s", ErrAssignRejected, addr, ans.Error)
		}
		if err == nil {
			out := make([]string, 0, len(ans.Locations))
			for _, l := range ans.Locations {
				out = append(out, l.URL)
			}
			return out, nil
		}
		errs = append(errs, err)
		if !isUnavailable(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// Status reads one master's /cluster/status.
func (c *Client) Status(ctx context.Context, addr string) (ClusterStatus, error) {
	var ans struct {
		IsLeader    bool     `json:"IsLeader"`
		Leader      string   `json:"Leader"`
		Peers       []string `json:"Peers"`
		MaxVolumeID uint32   `json:"MaxVolumeId"`
	}
	if err := c.get(ctx, addr, "/cluster/status", &ans); err != nil {
		return ClusterStatus{}, err
	}
	st := ClusterStatus{IsLeader: ans.IsLeader, Leader: httpAddress(ans.Leader), MaxVolumeID: ans.MaxVolumeID}
	for _, p := range ans.Peers {
		st.Peers = append(st.Peers, httpAddress(p))
	}
	if st.IsLeader && st.Leader == "" {
		st.Leader = addr
	}
	return st, nil
}

// httpAddress strips the gRPC port SeaweedFS may append to a server
// address ("host:port.grpcPort").
func httpAddress(s string) string {
	colon := strings.LastIndexByte(s, ':')
	if colon < 0 {
		return s
	}
	if dot := strings.IndexByte(s[colon:], '.'); dot >= 0 {
		return s[:colon+dot]
	}
	return s
}

// refreshIfStale re-reads the leader when the known one is too old or was
// invalidated by an unavailable answer. Failing to learn a leader is not an
// error here: the assign that follows reports the cluster's state.
func (c *Client) refreshIfStale(ctx context.Context) {
	if !c.stale() {
		return
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	if !c.stale() { // another caller refreshed while we waited
		return
	}
	for _, addr := range c.candidates() {
		st, err := c.Status(ctx, addr)
		if ctx.Err() != nil {
			return
		}
		if err != nil || st.Leader == "" {
			continue
		}
		c.observeLeader(st.Leader)
		return
	}
}

func (c *Client) stale() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checkedAt.IsZero() || time.Since(c.checkedAt) > c.cfg.LeaderRefresh
}

func (c *Client) observeLeader(leader string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader != "" && c.leader != leader {
		c.changes++
	}
	c.leader = leader
	c.checkedAt = time.Now()
}

// get performs one GET and decodes a JSON answer into out; a non-200 answer
// is classified.
func (c *Client) get(ctx context.Context, addr, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAssignRejected, addr, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("%w: %s: reading answer: %w", ErrUnreachable, addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return fmt.Errorf("%w: %s: HTTP %d: %.200s", classify(resp.StatusCode, msg), addr, resp.StatusCode, msg)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMalformedAnswer, addr, err)
	}
	return nil
}
