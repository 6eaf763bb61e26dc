package client

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/s-chain/schain/vm/api"
)

// Standard JSON-RPC 2.0 codes a gorilla/rpc server also produces (for
// example for an unknown method or an unreadable request).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInternalError  = -32603
)

// Sentinels for errors.Is. An *Error matches the sentinel of its code, so a
// caller can branch on the class without a type assertion; the transport
// sentinels classify failures that never produced a JSON-RPC answer.
var (
	// ErrNotOwner matches api.CodeNotOwner.
	ErrNotOwner = errors.New("not owner")
	// ErrNotReady matches api.CodeNotReady.
	ErrNotReady = errors.New("not ready")
	// ErrMempoolFull matches api.CodeMempoolFull.
	ErrMempoolFull = errors.New("mempool full")
	// ErrRejected matches api.CodeRejected.
	ErrRejected = errors.New("rejected")
	// ErrInvalidParams matches api.CodeInvalidParams.
	ErrInvalidParams = errors.New("invalid params")
	// ErrTimeout matches api.CodeTimeout: a server-side wait ran out; the
	// transaction may still be decided later.
	ErrTimeout = errors.New("timeout")
	// ErrUnauthorized matches api.CodeUnauthorized: a write without a valid
	// token (IsUnauthorized says why). Not retried.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrTooManyRequests matches api.CodeTooManyRequests: this token has
	// too many writes in flight on the node. Retried after the node's hint.
	ErrTooManyRequests = errors.New("too many requests")
	// ErrRequestTooLarge matches api.CodeRequestTooLarge: the request body
	// exceeds the node's maxRequestBytes. Not retried.
	ErrRequestTooLarge = errors.New("request too large")
	// ErrServer matches every other code (api.CodeUnknown and the JSON-RPC
	// protocol codes).
	ErrServer = errors.New("server error")

	// ErrTransport wraps failures to exchange a request with a node at all:
	// connection errors, per-request timeouts, and HTTP statuses that carry
	// no JSON-RPC answer. Retrying another time (or node) may succeed.
	ErrTransport = errors.New("transport error")
	// ErrMalformedResponse means the node answered something that is not a
	// JSON-RPC 2.0 response to our request: usually a wrong URI or a
	// version mismatch, so it is not retried.
	ErrMalformedResponse = errors.New("malformed response")
	// ErrResponseTooLarge means the answer exceeded the configured bound.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrTxRejected is returned by WaitForReceipt (with the receipt) when the
	// chain rejected the transaction.
	ErrTxRejected = errors.New("transaction rejected")
	// ErrNoRoute means the owner a node named is not one of the Router's
	// endpoints (or the hint chain exceeded its bound); it wraps the
	// NotOwner *Error so IsNotOwner still reports the owner.
	ErrNoRoute = errors.New("no route to owner")
	// ErrWrongChain means an endpoint serves a different chain than the one
	// the client was configured with.
	ErrWrongChain = errors.New("endpoint serves another chain")
)

// Error is a JSON-RPC error answered by a node. Code is one of the api.Code*
// constants (or a standard JSON-RPC code); Data is kept raw because its
// shape depends on Code: use the Is* helpers to decode it.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error names the code so that a log line alone says what happened.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d): %s", CodeName(e.Code), e.Code, e.Message)
}

// Is lets errors.Is(err, ErrNotOwner) and friends match by code.
func (e *Error) Is(target error) bool {
	return target == sentinel(e.Code)
}

// Name is CodeName(e.Code).
func (e *Error) Name() string { return CodeName(e.Code) }

func sentinel(code int) error {
	switch code {
	case api.CodeNotOwner:
		return ErrNotOwner
	case api.CodeNotReady:
		return ErrNotReady
	case api.CodeMempoolFull:
		return ErrMempoolFull
	case api.CodeRejected:
		return ErrRejected
	case api.CodeInvalidParams:
		return ErrInvalidParams
	case api.CodeTimeout:
		return ErrTimeout
	case api.CodeUnauthorized:
		return ErrUnauthorized
	case api.CodeTooManyRequests:
		return ErrTooManyRequests
	case api.CodeRequestTooLarge:
		return ErrRequestTooLarge
	default:
		return ErrServer
	}
}

// CodeName is a stable lowercase identifier of a code, for messages and
// machine output ("not_owner", "mempool_full", ...).
func CodeName(code int) string {
	switch code {
	case api.CodeNotOwner:
		return "not_owner"
	case api.CodeNotReady:
		return "not_ready"
	case api.CodeMempoolFull:
		return "mempool_full"
	case api.CodeRejected:
		return "rejected"
	case api.CodeInvalidParams:
		return "invalid_params"
	case api.CodeTimeout:
		return "timeout"
	case api.CodeUnauthorized:
		return "unauthorized"
	case api.CodeTooManyRequests:
		return "too_many_requests"
	case api.CodeRequestTooLarge:
		return "request_too_large"
	case api.CodeUnknown:
		return "unknown"
	case codeParseError:
		return "parse_error"
	case codeInvalidRequest:
		return "invalid_request"
	case codeMethodNotFound:
		return "method_not_found"
	case codeInternalError:
		return "internal_error"
	default:
		return fmt.Sprintf("code_%d", code)
	}
}

// AsError returns the node's *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// IsNotOwner reports whether err is a NotOwner answer and returns its
// routing hint. The hint is zero if the node sent no decodable data.
func IsNotOwner(err error) (api.NotOwnerData, bool) {
	var d api.NotOwnerData
	return d, decodeData(err, api.CodeNotOwner, &d)
}

// IsNotReady reports whether err is a NotReady answer.
func IsNotReady(err error) bool {
	e, ok := AsError(err)
	return ok && e.Code == api.CodeNotReady
}

// IsMempoolFull reports whether err is a MempoolFull answer and returns how
// long the node asked us to back off (zero if it did not say).
func IsMempoolFull(err error) (api.RetryData, bool) {
	var d api.RetryData
	return d, decodeData(err, api.CodeMempoolFull, &d)
}

// IsUnauthorized reports whether err is an Unauthorized answer and returns
// its reason (api.ReasonNoTokenConfigured, ReasonMissing or ReasonInvalid;
// empty if the node sent no decodable data).
func IsUnauthorized(err error) (api.UnauthorizedData, bool) {
	var d api.UnauthorizedData
	return d, decodeData(err, api.CodeUnauthorized, &d)
}

// IsTooManyRequests reports whether err is a TooManyRequests answer and
// returns how long the node asked us to back off.
func IsTooManyRequests(err error) (api.RetryData, bool) {
	var d api.RetryData
	return d, decodeData(err, api.CodeTooManyRequests, &d)
}

// IsRejected reports whether err is a Rejected answer and returns the rule's
// name (empty if the node sent no decodable data).
func IsRejected(err error) (api.RejectedData, bool) {
	var d api.RejectedData
	return d, decodeData(err, api.CodeRejected, &d)
}

// decodeData reports whether err carries code, decoding its data into v on a
// best-effort basis: a missing or odd payload must not hide the code itself.
func decodeData(err error, code int, v any) bool {
	e, ok := AsError(err)
	if !ok || e.Code != code {
		return false
	}
	if len(e.Data) > 0 {
		_ = json.Unmarshal(e.Data, v)
	}
	return true
}

// retryable reports whether the same request may succeed later: the node is
// not ready, pushes back (node-wide or on this token), or could not be
// reached. Rejected, InvalidParams, Unauthorized, RequestTooLarge, Timeout
// (the tx may exist: a retry would duplicate it) and unknown server errors
// are final.
func retryable(err error) bool {
	return errors.Is(err, ErrNotReady) || errors.Is(err, ErrMempoolFull) || errors.Is(err, ErrTooManyRequests) ||
		errors.Is(err, ErrTransport)
}
