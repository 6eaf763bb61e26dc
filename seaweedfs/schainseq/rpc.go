package schainseq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// JSON-RPC error codes of the S-Chain API (vm/api); a test of this module
// checks that they match.
const (
	codeNotOwner        = -32010
	codeNotReady        = -32011
	codeMempoolFull     = -32012
	codeRejected        = -32013
	codeTimeout         = -32014
	codeUnauthorized    = -32016
	codeTooManyRequests = -32017
)

var (
	// ErrUnreachable: no S-Chain node answered, or none could route the
	// request to its range's owner before the deadline.
	ErrUnreachable = errors.New("S-Chain unreachable")
	// ErrRefused: a node refused the request for good (unauthorized,
	// invalid parameters, a rule of the chain); retrying cannot help.
	ErrRefused = errors.New("S-Chain refused the request")

	errNoURIs  = errors.New("no S-Chain node URIs")
	errNoChain = errors.New("no S-Chain chain ID")
)

// maxAnswerBytes bounds one JSON-RPC answer.
const maxAnswerBytes = 1 << 20

// RPCError is a JSON-RPC error a node answered.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("S-Chain error %d: %s", e.Code, e.Message) }

// ClientConfig configures a Client.
type ClientConfig struct {
	// URIs are the nodes' base URIs (http://host:port).
	URIs []string
	// Chain is the chain ID (or alias) the service is at: /ext/bc/<Chain>.
	Chain string
	// Token is the write token, sent as "Authorization: Bearer".
	Token string
	// Timeout bounds one exchange that does not wait for a block.
	Timeout time.Duration
}

// Client talks to S-Chain nodes over JSON-RPC and sends each write to its
// range's owner: it asks any node for the owner, learns which URI serves
// which NodeID, follows NotOwner hints and retries NotReady, MempoolFull,
// TooManyRequests and unreachable nodes with bounded back-off until the
// caller's deadline. It is safe for concurrent use.
type Client struct {
	cfg    ClientConfig
	hc     *http.Client
	nodes  []*node
	nextID atomic.Uint64
	rr     atomic.Uint64 // round robin over nodes for reads

	mu     sync.Mutex        // guards owners
	owners map[string]string // range → owner NodeID, as last learned
}

// node is one endpoint; mu guards id and downUntil.
type node struct {
	uri, endpoint string
	mu            sync.Mutex
	id            string    // NodeID, "" until learned
	downUntil     time.Time // skipped for reads and routing until then
}

// NewClient checks cfg and returns a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if len(cfg.URIs) == 0 {
		return nil, errNoURIs
	}
	if cfg.Chain == "" {
		return nil, errNoChain
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	c := &Client{
		cfg:    cfg,
		owners: make(map[string]string),
		hc: &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}},
	}
	for _, u := range cfg.URIs {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		c.nodes = append(c.nodes, &node{uri: u, endpoint: u + "/ext/bc/" + cfg.Chain})
	}
	if len(c.nodes) == 0 {
		return nil, errNoURIs
	}
	return c, nil
}

// Reservation is an accepted allocation: ids [Base, Base+Count) of Range,
// committed on chain to this client's token.
type Reservation struct {
	Range string `json:"range"`
	Base  uint64 `json:"base"`
	Count uint64 `json:"count"`
	TxID  string `json:"txID"`
	Owner string `json:"owner"`
	// PChainHeight is the P-chain height the reservation was pinned to (0
	// for a pooled answer).
	PChainHeight uint64 `json:"pChainHeight"`
}

// End is the first id after the reservation.
func (r Reservation) End() uint64 { return r.Base + r.Count }

type allocateArgs struct {
	Range string `json:"range"`
	Count uint64 `json:"count"`
	Floor uint64 `json:"floor,omitempty"`
	// Wait is nil (no wait), true (until accepted) or "final" (until a
	// finality certificate covers the block).
	Wait   any    `json:"wait,omitempty"`
	WaitMs uint64 `json:"waitMs,omitempty"`
	Pooled bool   `json:"pooled,omitempty"`
}

// waitFinal is allocate's wait for a final receipt.
const waitFinal = "final"

func (a allocateArgs) final() bool { return a.Wait == waitFinal }

type receiptEntry struct {
	Range string `json:"range"`
	Base  uint64 `json:"base"`
	Count uint64 `json:"count"`
}

type receipt struct {
	TxID    string         `json:"txID"`
	Status  string         `json:"status"`
	Entries []receiptEntry `json:"entries"`
	Error   string         `json:"error"`
	// Final: a finality certificate (of more than 2/3 of the stake)
	// covers the block, at height CertifiedBy.
	Final       bool   `json:"final"`
	CertifiedBy uint64 `json:"certifiedBy"`
}

type allocateReply struct {
	TxID         string   `json:"txID"`
	Index        int      `json:"index"`
	PChainHeight uint64   `json:"pChainHeight"`
	Owner        string   `json:"owner"`
	Receipt      *receipt `json:"receipt"`
	Pooled       bool     `json:"pooled"`
	Base         uint64   `json:"base"`
	Count        uint64   `json:"count"`
}

// Reserve reserves count ids of rng at or above floor and waits until the
// reservation is accepted. A transaction whose wait runs out is abandoned,
// never polled and matched later: its ids, if accepted after all, are skipped
// (nobody else can be given them), which is always safe.
func (c *Client) Reserve(ctx context.Context, rng string, count, floor uint64) (Reservation, error) {
	return c.allocate(ctx, allocateArgs{Range: rng, Count: count, Floor: floor, Wait: true})
}

// ReserveFinal is Reserve waiting until the reservation's receipt is final:
// a finality certificate covers its block. When the node's wait runs out
// first (CodeTimeout, naming the transaction), it polls the receipt until
// it is final, rejected, or ctx ends; an abandoned transaction's ids are
// skipped, as with Reserve.
func (c *Client) ReserveFinal(ctx context.Context, rng string, count, floor uint64) (Reservation, error) {
	return c.allocate(ctx, allocateArgs{Range: rng, Count: count, Floor: floor, Wait: waitFinal})
}

// Pooled takes count ids of rng from its owner's committed pool: an answer
// without a block round trip, ids already committed to the owner.
func (c *Client) Pooled(ctx context.Context, rng string, count uint64) (Reservation, error) {
	return c.allocate(ctx, allocateArgs{Range: rng, Count: count, Pooled: true})
}

func (c *Client) allocate(ctx context.Context, args allocateArgs) (Reservation, error) {
	var last error
	for attempt := 0; ; attempt++ {
		n, err := c.route(ctx, args.Range)
		if err == nil {
			var rep allocateReply
			call := args
			if call.Wait != nil {
				call.WaitMs = waitMs(ctx)
			}
			err = c.call(ctx, n, "allocate", call, &rep, call.Wait != nil)
			if err != nil && args.final() && isCode(err, codeTimeout) {
				rep, err = c.pollFinal(ctx, err)
			}
			if err == nil {
				res, rerr := reservationOf(args, rep)
				if rerr == nil {
					return res, nil
				}
				err = rerr
			}
		}
		if !c.retry(args.Range, err) {
			return Reservation{}, fmt.Errorf("allocate %d of %q: %w", args.Count, args.Range, err)
		}
		last = err
		if serr := pause(ctx, backoff(attempt, err)); serr != nil {
			return Reservation{}, fmt.Errorf("%w: allocate %d of %q: %w (last error: %w)", ErrUnreachable, args.Count, args.Range, serr, last)
		}
	}
}

// errResend marks a transaction that reserved nothing (rejected after its
// wait, when its range moved to another owner): sending the request again
// is safe.
var errResend = errors.New("transaction rejected without effect")

// reservationOf reads this request's entry out of the reply.
func reservationOf(args allocateArgs, rep allocateReply) (Reservation, error) {
	res := Reservation{Range: args.Range, TxID: rep.TxID, Owner: rep.Owner, PChainHeight: rep.PChainHeight}
	if args.Pooled {
		if !rep.Pooled || rep.Count != args.Count {
			return Reservation{}, fmt.Errorf("%w: pooled answer %+v for %d ids", ErrRefused, rep, args.Count)
		}
		res.Base, res.Count = rep.Base, rep.Count
		return res, nil
	}
	rc := rep.Receipt
	if rc == nil {
		return Reservation{}, fmt.Errorf("%w: allocate answered without a receipt", ErrRefused)
	}
	switch rc.Status {
	case "accepted":
		if args.final() && !rc.Final {
			return Reservation{}, fmt.Errorf("%w: receipt of %s is accepted, not final, after a wait for finality", ErrRefused, rc.TxID)
		}
	case "rejected":
		// A rejected transaction reserved nothing, so sending the request
		// again is safe; after a wait it was rejected for its P-chain
		// height (the range moved, re-pinning failed), not for its
		// arguments, which the owner checked on admission. The caller's
		// deadline bounds the retries.
		return Reservation{}, fmt.Errorf("%w: %s: %s", errResend, rc.TxID, rc.Error)
	default:
		return Reservation{}, fmt.Errorf("%w: receipt of %s is %q after a wait", ErrRefused, rc.TxID, rc.Status)
	}
	if rep.Index < 0 || rep.Index >= len(rc.Entries) {
		return Reservation{}, fmt.Errorf("%w: receipt of %s has %d entries, want index %d", ErrRefused, rc.TxID, len(rc.Entries), rep.Index)
	}
	e := rc.Entries[rep.Index]
	if e.Range != args.Range || e.Count != args.Count || e.Base < args.Floor {
		return Reservation{}, fmt.Errorf("%w: entry %d of %s is %+v, want %d of %q at or above %d",
			ErrRefused, rep.Index, rc.TxID, e, args.Count, args.Range, args.Floor)
	}
	res.TxID, res.Base, res.Count = rc.TxID, e.Base, e.Count
	return res, nil
}

// finalPoll is the pause between two reads of a receipt not final yet.
const finalPoll = 200 * time.Millisecond

// pollFinal reads the receipt of the transaction a CodeTimeout answer
// (timeout) names until it is final or rejected, or ctx ends. Any node
// can answer: receipts and certificates are the chain's.
func (c *Client) pollFinal(ctx context.Context, timeout error) (allocateReply, error) {
	var re *RPCError
	errors.As(timeout, &re)
	var data struct {
		TxID  string `json:"txID"`
		Index int    `json:"index"`
	}
	if json.Unmarshal(re.Data, &data) != nil || data.TxID == "" {
		return allocateReply{}, fmt.Errorf("%w: a timeout without the transaction to poll: %w", ErrRefused, timeout)
	}
	for {
		var rc receipt
		err := c.read(ctx, "getReceipt", map[string]string{"txID": data.TxID}, &rc)
		if err == nil && (rc.Final || rc.Status == "rejected") {
			return allocateReply{TxID: data.TxID, Index: data.Index, Receipt: &rc}, nil
		}
		if serr := pause(ctx, finalPoll); serr != nil {
			return allocateReply{}, fmt.Errorf("%w: transaction %s not final: %w (last: status %q, %v)", ErrUnreachable, data.TxID, serr, rc.Status, err)
		}
	}
}

// retry reports whether err is worth another attempt, and forgets the
// range's owner when the error says the view of it may be stale.
func (c *Client) retry(rng string, err error) bool {
	var re *RPCError
	switch {
	case errors.Is(err, errResend), errors.Is(err, ErrUnreachable):
		c.forget(rng)
		return true
	case errors.As(err, &re):
		switch re.Code {
		case codeNotOwner:
			var hint struct {
				Owner string `json:"owner"`
			}
			if json.Unmarshal(re.Data, &hint) == nil && hint.Owner != "" {
				c.mu.Lock()
				c.owners[rng] = hint.Owner
				c.mu.Unlock()
			} else {
				c.forget(rng)
			}
			return true
		case codeNotReady:
			c.forget(rng)
			return true
		case codeMempoolFull, codeTooManyRequests:
			return true
		}
	}
	return false
}

func (c *Client) forget(rng string) {
	c.mu.Lock()
	delete(c.owners, rng)
	c.mu.Unlock()
}

// route returns the node that owns rng, as far as the nodes know.
func (c *Client) route(ctx context.Context, rng string) (*node, error) {
	c.mu.Lock()
	owner := c.owners[rng]
	c.mu.Unlock()
	if owner == "" {
		var rep struct {
			Owner string `json:"owner"`
		}
		if err := c.read(ctx, "getOwner", map[string]string{"range": rng}, &rep); err != nil {
			return nil, err
		}
		owner = rep.Owner
		c.mu.Lock()
		c.owners[rng] = owner
		c.mu.Unlock()
	}
	n, err := c.nodeByID(ctx, owner)
	if err != nil {
		return nil, err
	}
	if n == nil {
		c.forget(rng)
		return nil, fmt.Errorf("%w: range %q is owned by %s, which is none of the %d configured nodes", ErrUnreachable, rng, owner, len(c.nodes))
	}
	if n.down(time.Now()) {
		c.forget(rng)
		return nil, fmt.Errorf("%w: owner %s of %q at %s is down", ErrUnreachable, owner, rng, n.uri)
	}
	return n, nil
}

// nodeByID finds the node with NodeID id, asking the nodes whose id is
// not known yet; nil when none is it.
func (c *Client) nodeByID(ctx context.Context, id string) (*node, error) {
	for _, n := range c.nodes {
		if n.nodeID() == id {
			return n, nil
		}
	}
	for _, n := range c.nodes {
		if n.nodeID() != "" || n.down(time.Now()) {
			continue
		}
		var rep struct {
			NodeID string `json:"nodeID"`
		}
		if err := c.call(ctx, n, "getNode", struct{}{}, &rep, false); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		n.mu.Lock()
		n.id = rep.NodeID
		n.mu.Unlock()
		if rep.NodeID == id {
			return n, nil
		}
	}
	return nil, nil
}

// read asks the nodes in turn, starting with the next in round robin, until
// one answers.
func (c *Client) read(ctx context.Context, method string, params, result any) error {
	start := int(c.rr.Add(1))
	var last error
	for i := range c.nodes {
		n := c.nodes[(start+i)%len(c.nodes)]
		if n.down(time.Now()) {
			continue
		}
		err := c.call(ctx, n, method, params, result, false)
		if err == nil {
			return nil
		}
		var re *RPCError
		if errors.As(err, &re) || ctx.Err() != nil {
			return err
		}
		last = err
	}
	if last == nil {
		last = errors.New("every node is marked down")
	}
	return fmt.Errorf("%w: %s: %w", ErrUnreachable, method, last)
}

// Next returns rng's next unissued id in accepted state (0: never
// allocated).
func (c *Client) Next(ctx context.Context, rng string) (uint64, error) {
	var rep struct {
		Next uint64 `json:"next"`
	}
	var last error
	for attempt := 0; ; attempt++ {
		err := c.read(ctx, "getAllocation", map[string]string{"range": rng}, &rep)
		if err == nil {
			return rep.Next, nil
		}
		if !errors.Is(err, ErrUnreachable) && !isCode(err, codeNotReady) {
			return 0, err
		}
		last = err
		if serr := pause(ctx, backoff(attempt, err)); serr != nil {
			return 0, fmt.Errorf("%w: reading %q: %w (last error: %w)", ErrUnreachable, rng, serr, last)
		}
	}
}

// NextMax is Next asked of every node that is up, the highest answer: a
// node may lag a block behind the others, and a floor must never be read
// lower than recorded. It fails only if no node answered.
func (c *Client) NextMax(ctx context.Context, rng string) (uint64, error) {
	type answer struct {
		next uint64
		err  error
	}
	answers := make(chan answer, len(c.nodes))
	asked := 0
	for _, n := range c.nodes {
		if n.down(time.Now()) {
			continue
		}
		asked++
		go func() {
			var rep struct {
				Next uint64 `json:"next"`
			}
			err := c.call(ctx, n, "getAllocation", map[string]string{"range": rng}, &rep, false)
			answers <- answer{rep.Next, err}
		}()
	}
	var (
		best uint64
		ok   bool
	)
	for range asked {
		if a := <-answers; a.err == nil {
			best, ok = max(best, a.next), true
		}
	}
	if !ok {
		// Every node down or failing: Next retries until the deadline.
		return c.Next(ctx, rng)
	}
	return best, nil
}

func isCode(err error, code int) bool {
	var re *RPCError
	return errors.As(err, &re) && re.Code == code
}

func (n *node) nodeID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

func (n *node) down(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return now.Before(n.downUntil)
}

// downFor is how long an unreachable node is skipped.
const downFor = time.Second

func (n *node) markDown() {
	n.mu.Lock()
	n.downUntil = time.Now().Add(downFor)
	n.mu.Unlock()
}

// call runs one JSON-RPC exchange with n. A transport failure marks n down
// and wraps ErrUnreachable; an answered error is an *RPCError.
func (c *Client) call(ctx context.Context, n *node, method string, params, result any, wait bool) error {
	body, err := json.Marshal(struct {
		Version string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
		ID      uint64 `json:"id"`
	}{"2.0", "schain." + method, params, c.nextID.Add(1)})
	if err != nil {
		return err
	}
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if !wait {
		rctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, n.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// The caller's time ran out, not the node: no answer all
			// the same, but the node is not marked down.
			return fmt.Errorf("%w: %s at %s: %w", ErrUnreachable, method, n.uri, ctx.Err())
		}
		n.markDown()
		return fmt.Errorf("%w: %s at %s: %w", ErrUnreachable, method, n.uri, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		n.markDown()
		return fmt.Errorf("%w: %s at %s: reading the answer: %w", ErrUnreachable, method, n.uri, err)
	}
	var ans struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	jerr := json.Unmarshal(raw, &ans)
	switch {
	case jerr == nil && ans.Error != nil:
		if ans.Error.Code == codeUnauthorized {
			return fmt.Errorf("%w: %s at %s (check the write token): %w", ErrRefused, method, n.uri, ans.Error)
		}
		return ans.Error
	case resp.StatusCode != http.StatusOK:
		n.markDown()
		return fmt.Errorf("%w: %s at %s: HTTP %d: %.200s", ErrUnreachable, method, n.uri, resp.StatusCode, raw)
	case jerr != nil || len(ans.Result) == 0:
		return fmt.Errorf("%w: %s at %s: not a JSON-RPC answer: %.200s", ErrRefused, method, n.uri, raw)
	}
	if err := json.Unmarshal(ans.Result, result); err != nil {
		return fmt.Errorf("%w: %s at %s: result: %w", ErrRefused, method, n.uri, err)
	}
	return nil
}

// waitMs is the server-side wait a write may take: what is left of ctx,
// minus a margin for the answer to travel back, at least 1 ms.
func waitMs(ctx context.Context) uint64 {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0 // the node's own bound
	}
	left := time.Until(deadline) - 100*time.Millisecond
	return uint64(max(left, time.Millisecond) / time.Millisecond)
}

// backoff is the pause before retry attempt+1: exponential from 20 ms to
// 1 s with jitter, at least what a MempoolFull or TooManyRequests answer
// asked for (capped at 5 s).
func backoff(attempt int, err error) time.Duration {
	d := 20 * time.Millisecond << min(attempt, 6)
	d = min(d, time.Second)
	d = d/2 + rand.N(d/2+1)
	var re *RPCError
	if errors.As(err, &re) && (re.Code == codeMempoolFull || re.Code == codeTooManyRequests) {
		var hint struct {
			RetryAfterMs uint64 `json:"retryAfterMs"`
		}
		if json.Unmarshal(re.Data, &hint) == nil {
			d = max(d, min(time.Duration(hint.RetryAfterMs)*time.Millisecond, 5*time.Second))
		}
	}
	return d
}

// pause sleeps d unless ctx ends first or would end during the sleep.
func pause(ctx context.Context, d time.Duration) error {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return context.DeadlineExceeded
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
