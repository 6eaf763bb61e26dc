// Package client talks to S-Chain nodes over the JSON-RPC API of package
// api. Client is one endpoint, typed and bounded; Router spreads writes
// over several endpoints so that each range's writes reach its owner (the
// only node allowed to sign them: there is no fallback writer), and retries
// what the contract says is worth retrying, by one policy (Retry).
//
// It imports only the standard library and S-Chain's standard-library
// packages (api, errcode), so that the SeaweedFS patch copies it
// (seaweedfs/patch) instead of restating it: a master allocates through
// this same client. Proofs of finality, which need avalanchego's BLS, are
// package finality's.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/errcode"
)

var (
	errBadURI     = errors.New("node URI must be http(s)://host[:port]")
	errNoChain    = errors.New("chain ID is empty")
	errBadConfig  = errors.New("invalid client config")
	errNoEndpoint = errors.New("no node URIs")
)

// Config bounds one endpoint's exchanges. Start from DefaultConfig.
type Config struct {
	// Timeout bounds one request (connect, send, answer) unless the caller's
	// context ends sooner.
	Timeout time.Duration
	// WaitTimeout replaces Timeout for calls with Wait set, which the node
	// holds until the transaction is decided.
	WaitTimeout time.Duration
	// MaxResponseBytes bounds an answer's body, so a confused or hostile
	// endpoint cannot exhaust memory.
	MaxResponseBytes int64
	// HTTPClient, if set, replaces the bounded default (tests, proxies).
	HTTPClient *http.Client
	// Token is the node's write token, sent on every request as
	// "Authorization: Bearer <token>" (never in the URL). The write methods
	// (Allocate, PutManifest) need it; reads do not. Over plain HTTP it is
	// visible on the network: keep node APIs on a trusted network or behind
	// TLS.
	Token string
	// Direct sends every call to the node's direct API (getNode's
	// directURI, chain config directAPI) once the node announced one: the
	// same service without the node's HTTP server and the HTTP-over-gRPC
	// hop into the plugin. A call that cannot connect there goes to the
	// node's API instead, and the client asks getNode again a few seconds
	// later (a node restarted with directAPI port 0 listens elsewhere).
	Direct bool
}

// DefaultConfig suits a client on the same LAN as the nodes.
func DefaultConfig() Config {
	return Config{
		Timeout:          10 * time.Second,
		WaitTimeout:      2 * time.Minute,
		MaxResponseBytes: 4 << 20,
	}
}

// Verify checks that every bound is positive.
func (c Config) Verify() error {
	if c.Timeout <= 0 || c.WaitTimeout <= 0 || c.MaxResponseBytes <= 0 {
		return fmt.Errorf("%w: timeouts and MaxResponseBytes must be positive", errBadConfig)
	}
	return verifyToken(c.Token)
}

// maxTokenLen bounds a token; S-Chain's own are 50 bytes.
const maxTokenLen = 1024

// verifyToken checks that a token fits in a bearer header: visible ASCII
// without spaces. The error never quotes the token.
func verifyToken(tok string) error {
	if len(tok) > maxTokenLen {
		return fmt.Errorf("%w: token longer than %d bytes", errBadConfig, maxTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < 0x21 || tok[i] > 0x7e {
			return fmt.Errorf("%w: token has a space or non-printable byte at offset %d", errBadConfig, i)
		}
	}
	return nil
}

// newHTTPClient bounds every phase a context deadline would not name
// clearly, and keeps connections to the few nodes alive between calls.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 0,  // Wait calls legitimately take long; ctx bounds them
			MaxIdleConnsPerHost:   64, // a gateway's concurrent callers reuse connections instead of dialing
			IdleConnTimeout:       90 * time.Second,
		},
		// JSON-RPC never redirects; following one would change the method.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Client is one node's API. It is safe for concurrent use.
type Client struct {
	uri      string
	endpoint string
	cfg      Config
	hc       *http.Client
	nextID   atomic.Uint64
	direct   directRoute // used only with cfg.Direct
}

// New returns a client for the node at nodeURI (http://host:port) serving
// chainID (its ID or alias) at <nodeURI>/ext/bc/<chainID>.
func New(nodeURI, chainID string, cfg Config) (*Client, error) {
	if err := cfg.Verify(); err != nil {
		return nil, err
	}
	if chainID == "" {
		return nil, errNoChain
	}
	u, err := url.Parse(strings.TrimRight(nodeURI, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("%w: %q", errBadURI, nodeURI)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = newHTTPClient()
	}
	u = u.JoinPath("ext", "bc", chainID)
	return &Client{uri: strings.TrimRight(nodeURI, "/"), endpoint: u.String(), cfg: cfg, hc: hc}, nil
}

// URI is the node URI the client was built with.
func (c *Client) URI() string { return c.uri }

// Endpoint is the full JSON-RPC URL.
func (c *Client) Endpoint() string { return c.endpoint }

// Allocate asks the node to reserve ids; it answers NotOwner unless it owns
// args.Range in the membership its next block will have.
func (c *Client) Allocate(ctx context.Context, args api.AllocateArgs) (*api.AllocateReply, error) {
	reply := new(api.AllocateReply)
	return reply, c.call(ctx, "allocate", args, reply, args.Wait.Waits())
}

// PutManifest commits a manifest; the node must own args.Bucket.
func (c *Client) PutManifest(ctx context.Context, args api.PutManifestArgs) (*api.PutManifestReply, error) {
	reply := new(api.PutManifestReply)
	return reply, c.call(ctx, "putManifest", args, reply, args.Wait.Waits())
}

// AcquireLease asks the node, which must own args.Range, for the range's
// lease; it answers once the block that decides it is accepted: a
// LeaseReply, or ErrLeaseHeld with the holder (IsLeaseHeld).
func (c *Client) AcquireLease(ctx context.Context, args api.LeaseArgs) (*api.LeaseReply, error) {
	reply := new(api.LeaseReply)
	return reply, c.call(ctx, "acquireLease", args, reply, true)
}

// RenewLease extends the grant args.Token of args.Holder; ErrLeaseLost
// once it is no longer the range's.
func (c *Client) RenewLease(ctx context.Context, args api.LeaseArgs) (*api.LeaseReply, error) {
	reply := new(api.LeaseReply)
	return reply, c.call(ctx, "renewLease", args, reply, true)
}

// ReleaseLease ends the grant args.Token of args.Holder.
func (c *Client) ReleaseLease(ctx context.Context, args api.LeaseArgs) (*api.LeaseReply, error) {
	reply := new(api.LeaseReply)
	return reply, c.call(ctx, "releaseLease", args, reply, true)
}

// GetLease reads a range's lease in accepted state.
func (c *Client) GetLease(ctx context.Context, rangeKey string) (*api.LeaseStateReply, error) {
	reply := new(api.LeaseStateReply)
	return reply, c.call(ctx, "getLease", api.RangeArgs{Range: rangeKey}, reply, false)
}

// GetReceipt reports a transaction's status as this node knows it.
func (c *Client) GetReceipt(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	reply := new(api.ReceiptReply)
	return reply, c.call(ctx, "getReceipt", api.TxIDArgs{TxID: txID}, reply, false)
}

// GetAllocation reads a range's next unissued id (accepted state).
func (c *Client) GetAllocation(ctx context.Context, rangeKey string) (*api.AllocationReply, error) {
	return c.GetAllocationAt(ctx, rangeKey, 0)
}

// GetAllocationAt is GetAllocation from state at least as new as
// minHeight: a node that has not accepted it answers NotReady
// (below_min_height) instead of older state.
func (c *Client) GetAllocationAt(ctx context.Context, rangeKey string, minHeight uint64) (*api.AllocationReply, error) {
	reply := new(api.AllocationReply)
	return reply, c.call(ctx, "getAllocation", api.RangeArgs{Range: rangeKey, AtLeast: api.AtLeast{MinHeight: minHeight}}, reply, false)
}

// GetManifest reads an accepted manifest.
func (c *Client) GetManifest(ctx context.Context, bucket, key string) (*api.ManifestReply, error) {
	return c.GetManifestAt(ctx, bucket, key, 0)
}

// GetManifestAt is GetManifest from a node that accepted minHeight
// (NotReady below it).
func (c *Client) GetManifestAt(ctx context.Context, bucket, key string, minHeight uint64) (*api.ManifestReply, error) {
	return c.getManifest(ctx, api.ManifestArgs{Bucket: bucket, Key: key, AtLeast: api.AtLeast{MinHeight: minHeight}})
}

func (c *Client) getManifest(ctx context.Context, args api.ManifestArgs) (*api.ManifestReply, error) {
	reply := new(api.ManifestReply)
	return reply, c.call(ctx, "getManifest", args, reply, false)
}

// GetOwner names a range's owner in the membership the node's next block
// will have.
func (c *Client) GetOwner(ctx context.Context, rangeKey string) (*api.OwnerReply, error) {
	reply := new(api.OwnerReply)
	return reply, c.call(ctx, "getOwner", api.RangeArgs{Range: rangeKey}, reply, false)
}

// GetMembership describes the membership the node's next block will have.
func (c *Client) GetMembership(ctx context.Context) (*api.MembershipReply, error) {
	reply := new(api.MembershipReply)
	return reply, c.call(ctx, "getMembership", api.Empty{}, reply, false)
}

// GetNode identifies the node behind the endpoint.
func (c *Client) GetNode(ctx context.Context) (*api.NodeReply, error) {
	reply := new(api.NodeReply)
	return reply, c.call(ctx, "getNode", api.Empty{}, reply, false)
}

// WaitForReceipt waits until txID (or the transaction that replaced it) is
// decided, on the node when the client has a token, else polling; see
// Router.WaitForReceipt.
func (c *Client) WaitForReceipt(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	return waitForReceipt(ctx, txID, DefaultRetry(), api.WaitAccepted, c.receiptOnce(api.WaitAccepted))
}

// WaitFinal waits until txID (or its replacement) is decided and, if
// accepted, final (on the node when the client has a token, else polling):
// the receipt then carries its certificate.
func (c *Client) WaitFinal(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	return waitForReceipt(ctx, txID, DefaultRetry(), api.WaitFinal, c.receiptOnce(api.WaitFinal))
}

// WaitReceipt asks this node for txID's receipt once it is decided, or
// final with api.WaitFinal, waiting on the node for at most waitMs (0: the
// node's maxWaitMs). It needs a write token; a wait that runs out answers
// ErrTimeout (poll, or wait again).
func (c *Client) WaitReceipt(ctx context.Context, txID api.ID, until api.Wait, waitMs uint64) (*api.ReceiptReply, error) {
	reply := new(api.ReceiptReply)
	return reply, c.call(ctx, "waitReceipt", api.WaitReceiptArgs{TxID: txID, Wait: until, WaitMs: waitMs}, reply, true)
}

// receiptWaitMs bounds one waitReceipt: a decision or a certificate comes
// well within it, and a node that cannot know the answer (a transaction
// re-pinned by another owner while this node still holds it) costs no
// more than that before the caller asks again, possibly elsewhere.
const receiptWaitMs = 2_000

// receiptOnce is one step of a wait for a receipt: a wait on the node
// (waitReceipt, answered as soon as the receipt is decided or final) when
// the client has a token, else a read. A wait the node refuses (the token,
// too many in flight, a node without waitReceipt) or that ran out falls
// back to a read, and the caller's back-off decides when to ask again.
func (c *Client) receiptOnce(until api.Wait) func(context.Context, api.ID) (*api.ReceiptReply, error) {
	return func(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
		if c.cfg.Token != "" {
			rc, err := c.WaitReceipt(ctx, txID, until, receiptWaitMs)
			if err == nil || !waitRefused(err) {
				return rc, err
			}
		}
		return c.GetReceipt(ctx, txID)
	}
}

// waitRefused: a waitReceipt that did not wait to the end, for a reason a
// plain read gets around.
func waitRefused(err error) bool {
	var e *api.Error
	return errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrTooManyRequests) ||
		(errors.As(err, &e) && e.Code == int(errcode.MethodNotFound))
}

// GetCertificate is the finality certificate covering height (the lowest
// one at or above it); a NotReady error while none does.
func (c *Client) GetCertificate(ctx context.Context, height uint64) (*api.CertificateReply, error) {
	reply := new(api.CertificateReply)
	return reply, c.call(ctx, "getCertificate", api.HeightArgs{Height: height}, reply, false)
}

// GetBlock is the accepted block at height.
func (c *Client) GetBlock(ctx context.Context, height uint64) (*api.BlockReply, error) {
	reply := new(api.BlockReply)
	return reply, c.call(ctx, "getBlock", api.HeightArgs{Height: height}, reply, false)
}

type request struct {
	Version string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
	ID      uint64 `json:"id"`
}

// response is one JSON-RPC answer. Result holds a pointer to a nil pointer
// of the caller's reply type, so that the answer's result is decoded in the
// same pass as the rest (a result read apart is scanned twice more) and an
// absent or null result stays nil.
type response struct {
	Version string          `json:"jsonrpc"`
	Result  any             `json:"result"`
	Error   *api.Error      `json:"error"`
	ID      json.RawMessage `json:"id"`
}

// call runs one JSON-RPC exchange. Errors are an *api.Error (the node answered
// one), or wrap ErrTransport, ErrMalformedResponse, ErrResponseTooLarge, or
// the caller's context error.
func (c *Client) call(ctx context.Context, method string, params, result any, wait bool) error {
	full, id, body, err := c.encode(method, params)
	if err != nil {
		return err
	}
	timeout := c.cfg.Timeout
	if wait {
		timeout = c.cfg.WaitTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if c.cfg.Direct {
		if at, ok := c.direct.endpoint(rctx, c); ok {
			err := c.exchange(rctx, ctx, at.endpoint, at.uri, full, body, id, result)
			if !errors.Is(err, ErrTransport) {
				return err
			}
			// The next calls use the node's API until getNode is asked
			// again; this one goes there too only if nothing was sent
			// (otherwise it may have been made: the caller decides).
			c.direct.forget(at)
			if !refused(err) {
				return err
			}
		}
	}
	return c.exchange(rctx, ctx, c.endpoint, c.uri, full, body, id, result)
}

// encode builds one JSON-RPC request of method with a fresh id.
func (c *Client) encode(method string, params any) (full string, id uint64, body []byte, err error) {
	full = api.Service + "." + method
	id = c.nextID.Add(1)
	if body, err = json.Marshal(request{Version: "2.0", Method: full, Params: params, ID: id}); err != nil {
		return "", 0, nil, fmt.Errorf("%s: encode params: %w", full, err)
	}
	return full, id, body, nil
}

// exchange posts one JSON-RPC request to endpoint (at base URI uri, for
// errors) and decodes the answer; ctx is the caller's (its end is reported
// as such), rctx bounds this exchange.
func (c *Client) exchange(rctx, ctx context.Context, endpoint, uri, full string, body []byte, id uint64, result any) error {
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", full, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s at %s: %w", full, uri, context.Cause(ctx))
		}
		return fmt.Errorf("%w: %s at %s: %w", ErrTransport, full, uri, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s at %s: %w", full, uri, context.Cause(ctx))
		}
		return fmt.Errorf("%w: %s at %s: read answer: %w", ErrTransport, full, uri, err)
	}
	if int64(len(raw)) > c.cfg.MaxResponseBytes {
		return fmt.Errorf("%w: %s at %s: more than %d bytes", ErrResponseTooLarge, full, uri, c.cfg.MaxResponseBytes)
	}
	return c.decode(full, uri, resp.StatusCode, raw, id, result)
}

// decode interprets an answer. A JSON-RPC error wins over the HTTP status
// (gorilla answers errors with 200, proxies may not); a non-2xx status
// without one is a transport failure; a 2xx body that is not our response
// is malformed.
func (c *Client) decode(method, uri string, status int, raw []byte, id uint64, result any) error {
	slot := reflect.New(reflect.TypeOf(result)) // *Reply's pointer, nil until a result is read
	resp := response{Result: slot.Interface()}
	jsonErr := json.Unmarshal(raw, &resp)
	var resultErr error
	if t := (*json.UnmarshalTypeError)(nil); errors.As(jsonErr, &t) && (t.Field == "result" || strings.HasPrefix(t.Field, "result.")) {
		resultErr, jsonErr = jsonErr, nil // the envelope was read whole
	}
	if jsonErr == nil && resp.Error != nil {
		if string(resp.Error.Data) == "null" {
			resp.Error.Data = nil
		}
		return resp.Error
	}
	if status < 200 || status > 299 {
		return fmt.Errorf("%w: %s at %s: HTTP %d %s: %s", ErrTransport, method, uri, status,
			http.StatusText(status), snippet(raw))
	}
	got := slot.Elem()
	switch {
	case jsonErr != nil:
		return fmt.Errorf("%w: %s at %s: not JSON (%v): %s", ErrMalformedResponse, method, uri, jsonErr, snippet(raw))
	case resp.Version != "2.0":
		return fmt.Errorf("%w: %s at %s: jsonrpc version %q, want \"2.0\"", ErrMalformedResponse, method, uri, resp.Version)
	case string(resp.ID) != strconv.FormatUint(id, 10):
		return fmt.Errorf("%w: %s at %s: answer id %s, want %d", ErrMalformedResponse, method, uri, resp.ID, id)
	case resultErr != nil:
		return fmt.Errorf("%w: %s at %s: result: %v", ErrMalformedResponse, method, uri, resultErr)
	case got.IsNil():
		return fmt.Errorf("%w: %s at %s: neither result nor error", ErrMalformedResponse, method, uri)
	}
	reflect.ValueOf(result).Elem().Set(got.Elem())
	return nil
}

// snippet keeps error messages one short line.
func snippet(b []byte) string {
	const limit = 120
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	if s == "" {
		s = "(empty body)"
	}
	return fmt.Sprintf("%q", s)
}
