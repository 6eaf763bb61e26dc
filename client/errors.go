package client

import (
	"errors"
	"fmt"

	"github.com/s-chain/schain/errcode"

	"github.com/s-chain/schain/api"
)

// Sentinels for errors.Is: the classes of package errcode. An *api.Error
// matches the class of its code, so a caller can branch on the class
// without a type assertion (errors.Is(err, client.ErrNotOwner)); the
// transport sentinels classify failures that never produced a JSON-RPC
// answer.
var (
	// ErrNotOwner matches api.CodeNotOwner.
	ErrNotOwner = errcode.NotOwner.Class()
	// ErrNotReady matches api.CodeNotReady.
	ErrNotReady = errcode.NotReady.Class()
	// ErrMempoolFull matches api.CodeMempoolFull.
	ErrMempoolFull = errcode.MempoolFull.Class()
	// ErrRejected matches api.CodeRejected.
	ErrRejected = errcode.Rejected.Class()
	// ErrInvalidParams matches api.CodeInvalidParams.
	ErrInvalidParams = errcode.InvalidParams.Class()
	// ErrTimeout matches api.CodeTimeout: a server-side wait ran out; the
	// transaction may still be decided later.
	ErrTimeout = errcode.Timeout.Class()
	// ErrUnauthorized matches api.CodeUnauthorized: a write without a valid
	// token (IsUnauthorized says why). Not retried.
	ErrUnauthorized = errcode.Unauthorized.Class()
	// ErrTooManyRequests matches api.CodeTooManyRequests: this token has
	// too many writes in flight on the node. Retried after the node's hint.
	ErrTooManyRequests = errcode.TooManyRequests.Class()
	// ErrRequestTooLarge matches api.CodeRequestTooLarge: the request body
	// exceeds the node's maxRequestBytes. Not retried.
	ErrRequestTooLarge = errcode.RequestTooLarge.Class()
	// ErrForbidden matches api.CodeForbidden: the token is valid, but its
	// scope does not cover the method or the range (IsForbidden names
	// which). Not retried.
	ErrForbidden = errcode.Forbidden.Class()
	// ErrNotFound matches api.CodeNotFound.
	ErrNotFound = errcode.NotFound.Class()
	// ErrLeaseHeld matches api.CodeLeaseHeld: another holder holds the
	// lease (IsLeaseHeld names it). Not retried: the caller decides when to
	// ask again.
	ErrLeaseHeld = errcode.LeaseHeld.Class()
	// ErrLeaseLost matches api.CodeLeaseLost: the grant is no longer the
	// range's and its token is refused. Not retried.
	ErrLeaseLost = errcode.LeaseLost.Class()
	// ErrPreconditionFailed matches api.CodePreconditionFailed: a versioned
	// write's condition failed (IsPreconditionFailed names the current
	// version). Not retried: the same write fails the same way.
	ErrPreconditionFailed = errcode.PreconditionFailed.Class()
	// ErrConflict matches api.CodeConflict: a manifest names a chunk another
	// live object holds, or one already released. Not retried.
	ErrConflict = errcode.Conflict.Class()
	// ErrServer matches every other code (api.CodeUnknown and the JSON-RPC
	// protocol codes).
	ErrServer = errcode.Unknown.Class()

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
	// NotOwner *api.Error so IsNotOwner still reports the owner.
	ErrNoRoute = errors.New("no route to owner")
	// ErrWrongChain means an endpoint serves a different chain than the one
	// the client was configured with.
	ErrWrongChain = errors.New("endpoint serves another chain")
)

// CodeName is a stable lowercase identifier of a code, for messages and
// machine output ("not_owner", "mempool_full", ...).
func CodeName(code int) string { return errcode.Code(code).Name() }

// AsError returns the node's answered error inside err, if any.
func AsError(err error) (*api.Error, bool) {
	var e *api.Error
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

// IsForbidden reports whether err is a Forbidden answer and returns the
// scope the token lacks.
func IsForbidden(err error) (api.ForbiddenData, bool) {
	var d api.ForbiddenData
	return d, decodeData(err, api.CodeForbidden, &d)
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

// IsLeaseHeld reports whether err is a LeaseHeld answer and returns the
// lease that stands.
func IsLeaseHeld(err error) (api.LeaseData, bool) {
	var d api.LeaseData
	return d, decodeData(err, api.CodeLeaseHeld, &d)
}

// IsLeaseLost reports whether err is a LeaseLost answer and returns the
// lease that stands (Holder empty: nobody holds it).
func IsLeaseLost(err error) (api.LeaseData, bool) {
	var d api.LeaseData
	return d, decodeData(err, api.CodeLeaseLost, &d)
}

// decodeData reports whether err carries code, decoding its data into v on a
// best-effort basis: a missing or odd payload must not hide the code itself.
func decodeData(err error, code int, v any) bool {
	e, _ := AsError(err)
	return e.DataOf(code, v)
}

// retryable reports whether the same request may succeed later: the node is
// not ready, pushes back (node-wide or on this token), or could not be
// reached. Rejected, InvalidParams, Unauthorized, Forbidden, RequestTooLarge, Timeout
// (the tx may exist: a retry would duplicate it) and unknown server errors
// are final.
func retryable(err error) bool {
	return errors.Is(err, ErrNotReady) || errors.Is(err, ErrMempoolFull) || errors.Is(err, ErrTooManyRequests) ||
		errors.Is(err, ErrTransport)
}

// EntryError is the error of one entry of an accepted versioned manifest
// write or reclaim: nil if the entry wrote, else the *Error the node
// answers a waited write with (api.CodePreconditionFailed, CodeConflict or
// CodeRejected, with its data). A write sent without Wait learns its fate
// this way from its receipt.
func EntryError(rc *api.ReceiptReply, index int) error {
	if rc == nil || rc.Status != api.StatusAccepted {
		return nil
	}
	e, ok := rc.Entry(index)
	if !ok {
		return fmt.Errorf("%w: receipt of %s has %d entries from %d, not entry %d", ErrMalformedResponse, rc.TxID, len(rc.Entries), rc.First, index)
	}
	if e.Refused == "" {
		return nil
	}
	return api.NewError(api.RefusalCode(e.Refused), fmt.Sprintf("%s: %s", e.Refused, e.Detail), api.Refusal(rc.TxID, index, e))
}

// IsPreconditionFailed reports whether err is a PreconditionFailed answer
// and returns the object's current version.
func IsPreconditionFailed(err error) (api.PreconditionData, bool) {
	var d api.PreconditionData
	return d, decodeData(err, api.CodePreconditionFailed, &d)
}

// IsConflict reports whether err is a Conflict answer (a chunk another live
// object holds, or one released) and returns what stood in the way.
func IsConflict(err error) (api.ConflictData, bool) {
	var d api.ConflictData
	return d, decodeData(err, api.CodeConflict, &d)
}
