// Package errcode gives the errors an S-Chain node answers with their API
// identity: a stable code (the JSON-RPC error code clients branch on) and a
// stable reason (a lowercase rule name, "unallocated_chunk"). The identity
// belongs to the error itself, so renaming a message never changes the API:
// the server maps an error to its code and reason with Of, the client maps
// a code back to its class with Class, and the CLI maps classes to exit
// codes. It imports nothing of S-Chain, so every package can name its
// sentinels with New.
package errcode

import (
	"errors"
	"fmt"
)

// Code is a JSON-RPC error code of the API.
type Code int

// The codes. They are part of the API: clients branch on them.
const (
	// NotOwner: this node does not own the range in the membership the
	// next block will have. Data names the owner.
	NotOwner Code = -32010
	// NotReady: retry later (no membership open yet, no usable validator,
	// or the range moves to this node at the next block); never falls back
	// to another writer.
	NotReady Code = -32011
	// MempoolFull: node-wide backpressure. Data says how long to wait.
	MempoolFull Code = -32012
	// Rejected: the chain's rules refuse the request (Data names the rule).
	Rejected Code = -32013
	// Timeout: a wait ran out before the transaction was decided.
	Timeout Code = -32014
	// NotFound: the object does not exist in accepted state.
	NotFound Code = -32015
	// Unauthorized: a write without a valid write token.
	Unauthorized Code = -32016
	// TooManyRequests: the caller's token has too many writes in flight.
	TooManyRequests Code = -32017
	// RequestTooLarge: the request body exceeds the node's limit.
	RequestTooLarge Code = -32018
	// Forbidden: the write token is valid but its scope does not cover
	// the method or the range (Data names which).
	Forbidden Code = -32019
	// PreconditionFailed: a conditional manifest write found the object at
	// another version (or live where it had to be absent). Data names the
	// current version. Retrying the same write fails the same way.
	PreconditionFailed Code = -32020
	// LeaseHeld: another holder holds the lease unexpired. Data names it.
	LeaseHeld Code = -32021
	// LeaseLost: the grant a renew or release names is no longer held (it
	// expired, was released or another holder took the lease): its fencing
	// token is refused.
	LeaseLost Code = -32022
	// Conflict: the write names a chunk another live object holds, or one
	// already released. Data names the chunk and its holder.
	Conflict Code = -32023
	// InvalidParams: malformed or out-of-limit arguments (JSON-RPC's code).
	InvalidParams Code = -32602
	// Unknown: anything else (an internal failure).
	Unknown Code = -32000
)

// JSON-RPC 2.0's own codes, which a gorilla/rpc server also answers (an
// unknown method, an unreadable request): named, but all of Unknown's class.
const (
	ParseError     Code = -32700
	InvalidRequest Code = -32600
	MethodNotFound Code = -32601
	InternalError  Code = -32603
)

// Codes lists every code of the API, in a fixed order.
var Codes = []Code{NotOwner, NotReady, MempoolFull, Rejected, Timeout, NotFound, Unauthorized, TooManyRequests, RequestTooLarge, Forbidden, PreconditionFailed, LeaseHeld, LeaseLost, Conflict, InvalidParams, Unknown}

var names = map[Code]string{
	NotOwner: "not_owner", NotReady: "not_ready", MempoolFull: "mempool_full", Rejected: "rejected",
	Timeout: "timeout", NotFound: "not_found", Unauthorized: "unauthorized", TooManyRequests: "too_many_requests",
	RequestTooLarge: "request_too_large", Forbidden: "forbidden", PreconditionFailed: "precondition_failed",
	LeaseHeld: "lease_held", LeaseLost: "lease_lost", Conflict: "conflict",
	InvalidParams: "invalid_params", Unknown: "unknown",
	ParseError: "parse_error", InvalidRequest: "invalid_request", MethodNotFound: "method_not_found", InternalError: "internal_error",
}

// Name is the code's stable lowercase identifier ("not_owner"), for
// messages and machine output; codes outside the API get "code_<n>".
func (c Code) Name() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("code_%d", int(c))
}

// classes are the sentinels errors.Is matches a code's answers with.
var classes = func() map[Code]error {
	m := make(map[Code]error, len(Codes))
	for _, c := range Codes {
		m[c] = errors.New(names[c])
	}
	return m
}()

// Class is the sentinel of a code's class (Unknown's for codes outside the
// API), so that a client answer and a local error of one class compare
// equal under errors.Is.
func (c Code) Class() error {
	if e, ok := classes[c]; ok {
		return e
	}
	return classes[Unknown]
}

// Identified is an error with an API identity.
type Identified interface {
	error
	Code() Code
	Reason() string
}

// Error is a sentinel with an API identity.
type Error struct {
	code   Code
	reason string
	msg    string
}

var _ Identified = (*Error)(nil)

// New names a sentinel: its message, and the code and reason the API
// answers it with.
func New(code Code, reason, msg string) *Error { return &Error{code: code, reason: reason, msg: msg} }

func (e *Error) Error() string  { return e.msg }
func (e *Error) Code() Code     { return e.code }
func (e *Error) Reason() string { return e.reason }

// Is makes an identified error match its code's class.
func (e *Error) Is(target error) bool { return target == e.code.Class() }

// Of returns the identity of the first identified error in err's chain;
// an error that only wraps a class sentinel gets the class's code and name;
// anything else is Unknown with no reason.
func Of(err error) (Code, string) {
	var id Identified
	if errors.As(err, &id) {
		return id.Code(), id.Reason()
	}
	for _, c := range Codes {
		if errors.Is(err, classes[c]) {
			return c, names[c]
		}
	}
	return Unknown, ""
}
