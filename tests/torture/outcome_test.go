package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

// An operation's outcome is recorded as Ok, Fail or Info. Fail claims that
// the operation certainly did not take effect, so a wrong Fail makes false
// anomalies; the rules below give Fail only when two things hold:
//
//  1. every request the client sent for the operation (the router retries,
//     follows NotOwner hints and polls receipts) was answered: no request
//     was lost in flight after it may have reached a node (a dial that
//     failed sent nothing and does not count). The sent tracker sees each
//     HTTP exchange of the operation through its context;
//  2. the final error is one the API documents as a refusal before, or
//     instead of, applying anything (docs/api.md, "Error codes";
//     client/errors.go): NotOwner (the node signs nothing for a range it
//     does not own), MempoolFull and TooManyRequests (refused at
//     admission), InvalidParams, Unauthorized, Forbidden, RequestTooLarge,
//     and for leases LeaseHeld and LeaseLost (the block, or accepted state
//     settled for good, refused the grant).
//
// Everything else is Info: transport failures, the caller's deadline,
// Timeout (the transaction exists and may still be decided), Rejected (a
// rejected transaction may have been re-signed into another one by its
// owner), NotReady (a write bound to the next block may have been signed
// before the owner gave up waiting), unknown server errors and malformed
// answers.
//
// A failed precondition of a conditional put is not an error of the
// history's model: it is the put's answer, WriteResult{Applied: false}
// (the checker then proves that the condition indeed did not hold), under
// the same rule 1. Reads change nothing, so a read that fails for any
// reason is a Fail.

// sentKey keys the operation's tracker in a request's context.
type sentKey struct{}

// sent tracks one operation's HTTP exchanges.
type sent struct {
	// lost: a request may have reached a node and its answer was not read
	// whole, or a write's answer was not a refusal.
	lost atomic.Bool
	// applying counts the write exchanges that may have applied: answered
	// with a success or an uncertain error, or not answered at all.
	applying atomic.Int32

	mu    sync.Mutex
	notes []string // what made each exchange count, for the record
}

// mark records that an exchange lost its answer or may have applied.
func (s *sent) mark(write bool, what string) {
	s.lost.Store(true)
	if write {
		s.applying.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.notes) < 8 {
		s.notes = append(s.notes, what)
	}
}

func (s *sent) what() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.notes...)
}

func withTracker(ctx context.Context) (context.Context, *sent) {
	s := new(sent)
	return context.WithValue(ctx, sentKey{}, s), s
}

func trackerOf(ctx context.Context) *sent {
	s, _ := ctx.Value(sentKey{}).(*sent)
	return s
}

// trackingTransport marks the operation's tracker when an exchange's
// answer is lost: an error after the dial, a status other than 200 (a
// proxy's answer: gorilla answers JSON-RPC errors with 200), or a body cut
// short. An exchange of a write method marks it too unless its answer is
// one of the refusals that certainly applied nothing (refusals): a write
// the router sent again after a success or an uncertain answer (a
// committed allocation whose transaction was rejected, a NotReady) may
// have applied the first time, whatever the last answer says.
type trackingTransport struct{ base http.RoundTripper }

func (t trackingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := trackerOf(req.Context())
	if s == nil {
		return t.base.RoundTrip(req)
	}
	method, write := isWrite(req)
	at := time.Now().UTC().Format("15:04:05.000")
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if !dialFailed(err) {
			s.mark(write, fmt.Sprintf("%s %s at %s: %v", at, method, req.URL.Host, err))
		}
		return resp, err
	}
	if resp.StatusCode != http.StatusOK {
		s.mark(write, fmt.Sprintf("%s %s at %s: HTTP status %d", at, method, req.URL.Host, resp.StatusCode))
	}
	resp.Body = &trackedBody{ReadCloser: resp.Body, s: s, write: write, what: fmt.Sprintf("%s %s at %s", at, method, req.URL.Host)}
	return resp, nil
}

// writeMethods are the JSON-RPC methods that may change state.
var writeMethods = map[string]bool{
	"schain.allocate": true, "schain.allocateBatch": true, "schain.putManifest": true, "schain.reclaim": true,
	"schain.acquireLease": true, "schain.renewLease": true, "schain.releaseLease": true,
}

// isWrite names the JSON-RPC method req calls and reports whether it is a
// write method; a request whose body cannot be read again counts as one.
func isWrite(req *http.Request) (string, bool) {
	if req.GetBody == nil {
		return "?", true
	}
	b, err := req.GetBody()
	if err != nil {
		return "?", true
	}
	defer b.Close()
	var call struct {
		Method string `json:"method"`
	}
	if err := json.NewDecoder(b).Decode(&call); err != nil {
		return "?", true
	}
	return call.Method, writeMethods[call.Method]
}

// refusals are the codes that answer a write which certainly applied
// nothing (docs/api.md, "Error codes").
var refusals = map[int]bool{
	api.CodeNotOwner: true, api.CodeMempoolFull: true, api.CodeTooManyRequests: true, api.CodeInvalidParams: true,
	api.CodeUnauthorized: true, api.CodeForbidden: true, api.CodeRequestTooLarge: true,
	api.CodePreconditionFailed: true, api.CodeLeaseHeld: true, api.CodeLeaseLost: true,
}

// dialFailed reports whether err is a failure to connect: nothing of the
// request was sent.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// trackedBody marks the tracker when the answer is cut short or, for a
// write, is not a refusal.
type trackedBody struct {
	io.ReadCloser
	s     *sent
	write bool
	what  string
	buf   bytes.Buffer
	ended bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.write {
		b.buf.Write(p[:n])
	}
	switch {
	case errors.Is(err, io.EOF):
		b.ended = true
		if b.write && !refused(b.buf.Bytes()) {
			answer := b.buf.String()
			if len(answer) > 160 {
				answer = answer[:160] + "..."
			}
			b.s.mark(true, fmt.Sprintf("%s: answered %s", b.what, strings.TrimSpace(answer)))
		}
	case err != nil:
		b.s.mark(b.write, fmt.Sprintf("%s: reading the answer: %v", b.what, err))
	}
	return n, err
}

func (b *trackedBody) Close() error {
	if !b.ended {
		b.s.mark(b.write, b.what+": answer not read to its end")
	}
	return b.ReadCloser.Close()
}

// refused reports whether a JSON-RPC answer is an error with a refusal's
// code.
func refused(answer []byte) bool {
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal(answer, &r) == nil && r.Error != nil && refusals[r.Error.Code]
}

// httpClient is the client package's bounded HTTP client with the tracker
// in its transport.
func httpClient() *http.Client {
	return &http.Client{
		Transport: trackingTransport{base: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// outcome is how a write ended, for the recorder.
type outcome int

const (
	outcomeOk outcome = iota
	// outcomeRefused: certainly not applied (Fail).
	outcomeRefused
	// outcomePrecondition: a conditional put's condition failed (Ok, not
	// applied).
	outcomePrecondition
	// outcomeUnknown: may or may not have applied (Info).
	outcomeUnknown
)

// classifyWrite applies the rules above to a write's error.
func classifyWrite(err error, s *sent) outcome {
	o := answerOf(err)
	if o != outcomeOk && s.lost.Load() {
		return outcomeUnknown
	}
	return o
}

// retried reports whether the client answered a write definitely (a
// success or a refusal) although an earlier exchange of the same write
// may have applied: the router sent the write again after a lost or
// uncertain answer. Such a write may have applied twice (a success), or
// been refused because its own first attempt applied (a refusal, which
// classifyWrite then records as Info).
func retried(err error, s *sent) bool {
	switch answerOf(err) {
	case outcomeOk:
		return s.applying.Load() >= 2
	case outcomeRefused, outcomePrecondition:
		return s.applying.Load() >= 1
	}
	return false
}

// answerOf is the outcome the final answer alone claims.
func answerOf(err error) outcome {
	switch {
	case err == nil:
		return outcomeOk
	case errors.Is(err, client.ErrTransport), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return outcomeUnknown
	case errors.Is(err, client.ErrPreconditionFailed):
		return outcomePrecondition
	case errors.Is(err, client.ErrNotOwner), errors.Is(err, client.ErrMempoolFull), errors.Is(err, client.ErrTooManyRequests),
		errors.Is(err, client.ErrInvalidParams), errors.Is(err, client.ErrUnauthorized), errors.Is(err, client.ErrForbidden),
		errors.Is(err, client.ErrRequestTooLarge), errors.Is(err, client.ErrLeaseHeld), errors.Is(err, client.ErrLeaseLost):
		return outcomeRefused
	}
	return outcomeUnknown
}
