package seaweed

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

// Error classes of a master's answers. Each wraps legacy.ErrUnavailable or
// legacy.ErrRejected, so callers classify with errors.Is and never parse
// messages; the message keeps the master's own words for investigation.
var (
	// ErrUnreachable: no HTTP answer (connection refused, reset, timeout).
	ErrUnreachable = fmt.Errorf("%w: master unreachable", legacy.ErrUnavailable)
	// ErrNoLeader: a follower could not reach the leader (502 from its
	// proxy, the leader being dead), or no master knows a leader.
	ErrNoLeader = fmt.Errorf("%w: no reachable leader", legacy.ErrUnavailable)
	// ErrWarmingUp: 503, a new leader waiting for volume servers to
	// re-register (about 15 s), or volume growth in progress.
	ErrWarmingUp = fmt.Errorf("%w: master warming up", legacy.ErrUnavailable)
	// ErrNoWritableVolume: no writable (or free) volume for the collection,
	// as a leader answers before volume servers have registered.
	ErrNoWritableVolume = fmt.Errorf("%w: no writable volume", legacy.ErrUnavailable)
	// ErrTimeout: the master gave up (408) or a gateway timed out (504).
	ErrTimeout = fmt.Errorf("%w: master timed out", legacy.ErrUnavailable)
	// ErrAssignRejected: any other refusal of the request.
	ErrAssignRejected = fmt.Errorf("%w: master refused assign", legacy.ErrRejected)
	// ErrMalformedAnswer: a 200 answer without a valid fid or count.
	ErrMalformedAnswer = fmt.Errorf("%w: malformed master answer", legacy.ErrRejected)
	// ErrBadCount: count is 0 or above Config.MaxCount; nothing was sent.
	ErrBadCount = fmt.Errorf("%w: bad count", legacy.ErrRejected)
)

// classify maps a master's non-200 answer (or a 200 carrying an error) to
// an error class. Volume shortage is judged by message first because the
// master reports it with 406, which otherwise means a bad request.
func classify(status int, msg string) error {
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "no writable volume"), strings.Contains(lower, "no free volume"):
		return ErrNoWritableVolume
	case status == http.StatusBadGateway:
		return ErrNoLeader
	case status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests:
		return ErrWarmingUp
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return ErrTimeout
	default:
		return ErrAssignRejected
	}
}

// isUnavailable reports whether err is worth trying on another master.
func isUnavailable(err error) bool { return errors.Is(err, legacy.ErrUnavailable) }
