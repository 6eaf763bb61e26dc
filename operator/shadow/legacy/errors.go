package legacy

import (
	"errors"
	"fmt"
)

var (
	// ErrUnavailable classifies failures that say nothing about the request:
	// no leader, a leader still warming up, failed forwarding, saturated
	// queues. Retrying later, possibly on the hinted leader, may succeed.
	ErrUnavailable = errors.New("legacy allocator unavailable")

	// ErrRejected classifies requests the allocator refuses on their merits
	// (empty range, zero or oversized count). Retrying cannot succeed.
	ErrRejected = errors.New("legacy allocator rejected request")
)

// NotLeaderError reports that the contacted node is not the leader for the
// request and could not (or was told not to) forward it. It is classified as
// ErrUnavailable so callers handle it like any other transient failure, while
// LeaderHint lets smart clients go straight to the leader.
type NotLeaderError struct {
	// LeaderID is the raft server id of the leader the node believes in, or
	// empty when unknown.
	LeaderID string
	// LeaderHint is the API address (host:port) of that leader, or empty when
	// unknown.
	LeaderHint string
	// Cause is why forwarding failed, if it was attempted.
	Cause error
}

// Error implements error.
func (e *NotLeaderError) Error() string {
	msg := "not leader"
	if e.LeaderID != "" || e.LeaderHint != "" {
		msg = fmt.Sprintf("not leader (leader %q at %q)", e.LeaderID, e.LeaderHint)
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrUnavailable) true for a NotLeaderError.
func (e *NotLeaderError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap exposes the forwarding failure, if any.
func (e *NotLeaderError) Unwrap() error { return e.Cause }

// LeaderHint returns the leader API address carried by err, or "" when err
// carries none.
func LeaderHint(err error) string {
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		return nl.LeaderHint
	}
	return ""
}
