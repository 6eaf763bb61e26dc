package rpc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"
	"go.uber.org/zap"

	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/config"
)

// openMethods may be called by anyone who reaches the API: they only read
// accepted state. Every other method needs a write token: the list fails
// closed, so a new method that makes the node sign cannot be left open by
// forgetting it here.
var openMethods = map[string]bool{
	"GetReceipt":     true,
	"GetAllocation":  true,
	"GetManifest":    true,
	"GetOwner":       true,
	"GetEpoch":       true,
	"GetMembership":  true,
	"GetNode":        true,
	"GetCertificate": true,
	"GetBlock":       true,
	"GetLease":       true,
	"ListManifests":  true,
	"ListReleased":   true,
}

// scopedMethods are the write methods that check every range they write
// against the token's scope (Service.covers): a scoped token may call
// them if its methods name them. A write method missing here is refused
// to every scoped token, so a new one cannot slip past the ranges: list it
// once it calls covers for each range (or bucket) it writes.
var scopedMethods = map[string]bool{
	"Allocate":      true,
	"AllocateBatch": true,
	"PutManifest":   true,
	"Reclaim":       true,
	"AcquireLease":  true,
	"RenewLease":    true,
	"ReleaseLease":  true,
}

// tokenOnlyMethods need a valid token (they hold a request open) but write
// nothing: every token may call them, whatever its scope.
var tokenOnlyMethods = map[string]bool{
	"WaitReceipt": true,
}

// Reasons of api rejects beyond api.Reason* (metric and log labels).
const (
	reasonForbidden       = "forbidden"
	reasonTooManyRequests = "too_many_requests"
	reasonBodyTooLarge    = "body_too_large"
	reasonBadBody         = "unreadable_body"
	reasonInvalidParams   = "invalid_params"
	// noToken labels requests that were not admitted by a valid token.
	noToken = "none"
)

// retryAfterTooMany is the back-off hint of CodeTooManyRequests: a token's
// pending requests return within a block or two.
const retryAfterTooMany = 250

// rejectLogInterval spaces the log lines of one (reason, token): a flood of
// refused requests must not flood the node's log.
const rejectLogInterval = 10 * time.Second

// writeToken is a configured token with its scope and its in-flight
// write requests.
type writeToken struct {
	name    string
	hash    [sha256.Size]byte
	scope   config.Scope
	pending atomic.Int64
}

// gate is the API's access control and abuse limits: it bounds request
// bodies, admits writes by bearer token, and bounds each token's writes in
// flight. It is safe for concurrent use.
type gate struct {
	cfg config.ChainConfig
	// enforce is false only for a VM started in-process without a chain
	// config (Config.ChainConfig nil): tests and embedding. Initialize always
	// enforces.
	enforce bool
	tokens  []*writeToken
	log     logging.Logger
	metrics *metrics

	logMu   sync.Mutex
	logLast map[string]rejectLogState // guarded by logMu; keys are bounded: reasons x (tokens + none)
}

type rejectLogState struct {
	at         time.Time
	suppressed uint64
}

func newGate(cc *config.ChainConfig, log logging.Logger, m *metrics) (*gate, error) {
	g := &gate{cfg: config.DefaultChainConfig(), log: log, metrics: m, logLast: map[string]rejectLogState{}}
	if cc == nil {
		log.Warn("api access control disabled: the VM was started without a chain config (in-process use only)")
		return g, nil
	}
	if err := cc.Verify(); err != nil {
		return nil, err
	}
	g.cfg, g.enforce = *cc, true
	names := make([]string, 0, len(cc.WriteTokens))
	for _, t := range cc.WriteTokens {
		h, err := hex.DecodeString(t.SHA256)
		if err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("%w: token %s: bad sha256", config.ErrBadChainConfig, t.Name)
		}
		wt := &writeToken{name: t.Name, scope: t.Scope()}
		copy(wt.hash[:], h)
		g.tokens = append(g.tokens, wt)
		names = append(names, t.Name)
		m.apiPending.WithLabelValues(t.Name).Set(0)
		warnScope(log, t)
	}
	if len(names) == 0 {
		log.Warn("api write methods disabled: the chain config lists no writeTokens (see README, Access control)")
	}
	log.Info("api access control",
		zap.Strings("writeTokens", names),
		zap.Int64("maxRequestBytes", cc.MaxRequestBytes),
		zap.Int("maxPendingPerToken", cc.MaxPendingPerToken),
		zap.Uint64("maxWaitMs", cc.MaxWaitMs),
	)
	return g, nil
}

// warnScope says at start what an operator may not have meant: a token
// written before scopes (it writes everything, the floors a SeaweedFS
// cutover rests on included), or methods this node does not serve (a
// typo, or a method of a newer version).
func warnScope(log logging.Logger, t config.WriteToken) {
	if t.Unscoped() {
		log.Warn("write token names no ranges or methods: it may write every range, every SeaweedFS prefix's floors and volumes included; give it ranges and methods (see README, Access control)",
			zap.String("token", t.Name))
		return
	}
	for _, m := range t.Methods {
		if m != config.EveryMethod && !scopedMethods[exported(m)] {
			log.Warn("write token names a method this node does not serve to scoped tokens", zap.String("token", t.Name), zap.String("method", m))
		}
	}
}

// exported is a JSON-RPC method's Go name ("allocate" → "Allocate").
func exported(m string) string {
	if m == "" {
		return m
	}
	return strings.ToUpper(m[:1]) + m[1:]
}

// jsonName is a method's JSON-RPC name ("Allocate" → "allocate").
func jsonName(m string) string {
	if m == "" {
		return m
	}
	return strings.ToLower(m[:1]) + m[1:]
}

// matchToken returns the configured token whose hash is SHA-256(presented),
// or nil. It hashes first, then compares with every configured hash in
// constant time (crypto/subtle) and without stopping at a match, so its
// timing tells nothing about how much of which hash matched.
func matchToken(tokens []*writeToken, presented string) *writeToken {
	sum := sha256.Sum256([]byte(presented))
	var found *writeToken
	for _, t := range tokens {
		if subtle.ConstantTimeCompare(sum[:], t.hash[:]) == 1 {
			found = t
		}
	}
	return found
}

// bearer extracts the token of an "Authorization: Bearer <token>" value
// (scheme case-insensitive, RFC 6750).
func bearer(value string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(value), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// authenticate finds the write token of a request, or says why there is
// none (an api.Reason*).
func (g *gate) authenticate(r *http.Request) (*writeToken, string) {
	if len(g.tokens) == 0 {
		return nil, api.ReasonNoTokenConfigured
	}
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return nil, api.ReasonMissing
	case 1:
	default:
		return nil, api.ReasonInvalid
	}
	tok, ok := bearer(values[0])
	if !ok {
		return nil, api.ReasonInvalid
	}
	if t := matchToken(g.tokens, tok); t != nil {
		return t, ""
	}
	return nil, api.ReasonInvalid
}

// tokenLabel names the request's valid token for metrics and logs, or
// "none"; never the token itself.
func (g *gate) tokenLabel(r *http.Request) string {
	if t, _ := g.authenticate(r); t != nil {
		return t.name
	}
	return noToken
}

// callKey is the context key of a request's *call.
type callKey struct{}

// call is one HTTP request's admission: the token that admitted it holds
// one pending slot until the answer is written.
type call struct {
	token *writeToken
}

func callOf(r *http.Request) (*call, bool) {
	c, ok := r.Context().Value(callKey{}).(*call)
	return c, ok
}

func (c *call) tokenName() string {
	if c == nil || c.token == nil {
		return noToken
	}
	return c.token.name
}

// admit decides whether method may run: open methods always, the others
// only with a valid write token that has a free pending slot. The slot is
// released by the handler once the answer is written.
func (g *gate) admit(r *http.Request, method string) error {
	name := strings.TrimPrefix(method, api.Service+".")
	if openMethods[name] || !g.enforce {
		return nil
	}
	c, ok := callOf(r)
	if !ok {
		// The codec runs only behind the handler; fail closed if not.
		return &json2.Error{Code: json2.ErrorCode(errcode.Unknown), Message: "vm: request bypassed the API gate"}
	}
	t, reason := g.authenticate(r)
	if t == nil {
		g.reject(r, method, reason, noToken)
		return unauthorized(reason, method)
	}
	if err := g.permit(t, name); err != nil {
		g.reject(r, method, reasonForbidden, t.name)
		return err
	}
	if n := t.pending.Add(1); n > int64(g.cfg.MaxPendingPerToken) {
		t.pending.Add(-1)
		g.reject(r, method, reasonTooManyRequests, t.name)
		return &json2.Error{
			Code: json2.ErrorCode(errcode.TooManyRequests),
			Message: fmt.Sprintf("token %q already has %d write requests in flight on this node (maxPendingPerToken); retry after some return",
				t.name, g.cfg.MaxPendingPerToken),
			Data: api.RetryData{RetryAfterMs: retryAfterTooMany},
		}
	}
	c.token = t
	g.metrics.apiWrites.WithLabelValues(t.name).Inc()
	g.metrics.apiPending.WithLabelValues(t.name).Inc()
	return nil
}

// permit checks the method against the token's scope: an unscoped token
// may call anything, a scoped one the methods it names that check their
// ranges (scopedMethods), and every token the token-only ones.
func (g *gate) permit(t *writeToken, name string) error {
	switch {
	case t.scope.Unscoped() || tokenOnlyMethods[name]:
		return nil
	case !scopedMethods[name]:
		return forbidden(api.ForbiddenData{Reason: api.ScopeMethod, Token: t.name, Method: jsonName(name)},
			fmt.Sprintf("%s does not check token scopes: only a token without ranges and methods may call it", jsonName(name)))
	case !t.scope.Allows(jsonName(name)):
		return forbidden(api.ForbiddenData{Reason: api.ScopeMethod, Token: t.name, Method: jsonName(name)},
			fmt.Sprintf("token %q may not call %s: add it to the token's methods in the chain config", t.name, jsonName(name)))
	}
	return nil
}

// covers checks that the request's token may write rangeKey (a range, or
// a manifest's bucket); every scoped write method calls it for each range
// it writes before writing any.
func (g *gate) covers(r *http.Request, rangeKey string) error {
	c, ok := callOf(r)
	if !g.enforce {
		return nil
	}
	if !ok || c.token == nil {
		// Admission runs before any write method: fail closed if not.
		return &json2.Error{Code: json2.ErrorCode(errcode.Unknown), Message: "vm: write without an admitted token"}
	}
	if c.token.scope.Covers(rangeKey) {
		return nil
	}
	g.reject(r, "", reasonForbidden, c.token.name)
	return forbidden(api.ForbiddenData{Reason: api.ScopeRange, Token: c.token.name, Range: rangeKey},
		fmt.Sprintf("token %q may not write range %q: add a pattern that covers it to the token's ranges in the chain config (a \"*\" never stands for a floor or volumes segment: name those)", c.token.name, rangeKey))
}

func forbidden(d api.ForbiddenData, msg string) error {
	return &json2.Error{Code: json2.ErrorCode(errcode.Forbidden), Message: msg, Data: d}
}

func (g *gate) release(c *call) {
	if c.token != nil {
		c.token.pending.Add(-1)
		g.metrics.apiPending.WithLabelValues(c.token.name).Dec()
		c.token = nil
	}
}

func unauthorized(reason, method string) error {
	var msg string
	switch reason {
	case api.ReasonNoTokenConfigured:
		msg = "write methods are disabled on this node: its chain config lists no writeTokens (see README, Access control)"
	case api.ReasonMissing:
		msg = fmt.Sprintf("%s needs a write token: send \"Authorization: Bearer <token>\"", method)
	default:
		msg = "the write token is not accepted by this node (unknown, revoked, or a malformed Authorization header)"
	}
	return &json2.Error{Code: json2.ErrorCode(errcode.Unauthorized), Message: msg, Data: api.UnauthorizedData{Reason: reason}}
}

// reject counts a refused request by reason and token name and logs it, at
// most once per rejectLogInterval for each (reason, token).
func (g *gate) reject(r *http.Request, method, reason, token string) {
	g.metrics.apiRejects.WithLabelValues(reason, token).Inc()
	key := reason + "\x00" + token
	now := time.Now()
	g.logMu.Lock()
	st := g.logLast[key]
	if now.Sub(st.at) < rejectLogInterval {
		st.suppressed++
		g.logLast[key] = st
		g.logMu.Unlock()
		return
	}
	g.logLast[key] = rejectLogState{at: now}
	g.logMu.Unlock()
	fields := []zap.Field{zap.String("reason", reason), zap.String("token", token)}
	if method != "" {
		fields = append(fields, zap.String("method", method))
	}
	// Empty behind rpcchainvm, which does not forward the peer's address.
	if r.RemoteAddr != "" {
		fields = append(fields, zap.String("remoteAddr", r.RemoteAddr))
	}
	g.log.Warn("api request refused", append(fields, zap.Uint64("suppressedSinceLastLine", st.suppressed))...)
}

// apiHandler bounds the request body, then runs the JSON-RPC server with
// the request's admission state, released once the answer is written.
type apiHandler struct {
	gate *gate
	next http.Handler
}

func (h apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := h.gate.cfg.MaxRequestBytes
	if r.ContentLength > limit {
		h.tooLarge(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.tooLarge(w, r)
			return
		}
		h.gate.reject(r, "", reasonBadBody, noToken)
		writeRPCError(w, http.StatusBadRequest, &json2.Error{Code: json2.E_PARSE, Message: "reading the request body: " + err.Error()})
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := &call{}
	defer h.gate.release(c)
	h.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
}

func (h apiHandler) tooLarge(w http.ResponseWriter, r *http.Request) {
	limit := h.gate.cfg.MaxRequestBytes
	h.gate.reject(r, "", reasonBodyTooLarge, h.gate.tokenLabel(r))
	w.Header().Set("Connection", "close")
	writeRPCError(w, http.StatusRequestEntityTooLarge, &json2.Error{
		Code:    json2.ErrorCode(errcode.RequestTooLarge),
		Message: fmt.Sprintf("request body larger than this node's maxRequestBytes (%d bytes)", limit),
		Data:    api.LimitData{Limit: "maxRequestBytes", Max: limit},
	})
}

// writeRPCError answers a request the JSON-RPC server never saw.
func writeRPCError(w http.ResponseWriter, status int, e *json2.Error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Version string       `json:"jsonrpc"`
		Error   *json2.Error `json:"error"`
		ID      any          `json:"id"`
	}{"2.0", e, nil})
}

// apiCodec admits each call before decoding its arguments (so an
// unauthorized caller learns nothing from argument errors), and reports
// arguments that do not decode as "invalid params".
type apiCodec struct {
	rpc.Codec
	gate  *gate
	fresh *freshness
}

func (c apiCodec) NewRequest(r *http.Request) rpc.CodecRequest {
	return apiRequest{CodecRequest: c.Codec.NewRequest(r), gate: c.gate, fresh: c.fresh, req: r}
}

type apiRequest struct {
	rpc.CodecRequest
	gate  *gate
	fresh *freshness
	req   *http.Request
}

// answersBootstrapping are the methods a bootstrapping node still answers:
// getNode says who the node is and that it is bootstrapping.
var answersBootstrapping = map[string]bool{"GetNode": true}

func (r apiRequest) ReadRequest(args any) error {
	method, err := r.Method()
	if err != nil {
		return err
	}
	if err := r.gate.admit(r.req, method); err != nil {
		return err
	}
	if r.fresh.bootstrapping.Load() && !answersBootstrapping[strings.TrimPrefix(method, api.Service+".")] {
		return rpcError(&lagError{ErrBootstrapping, r.fresh.reads.LastAccepted().Block.Height})
	}
	if err := r.CodecRequest.ReadRequest(args); err != nil {
		r.gate.invalidParams(r.req, method)
		return invalidParams(err)
	}
	return nil
}

// invalidParams counts a write refused for its arguments under its token.
func (g *gate) invalidParams(r *http.Request, method string) {
	if openMethods[strings.TrimPrefix(method, api.Service+".")] {
		return
	}
	c, _ := callOf(r)
	g.reject(r, method, reasonInvalidParams, c.tokenName())
}
