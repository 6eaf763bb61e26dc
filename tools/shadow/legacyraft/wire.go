package legacyraft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

// HTTP API shared by the node handler, node forwarding and Client.
const (
	pathAllocate = "/allocate"
	pathWritten  = "/written"
	pathStatus   = "/status"
	// headerForwarded marks a request forwarded by a follower; the receiver
	// serves it locally or fails, so forwarding never loops.
	headerForwarded = "X-Legacy-Forwarded"
	// headerLeader is set by a follower that forwarded a request: the
	// leader's address, where the client sends its next requests, as
	// SeaweedFS clients follow the master leader instead of paying a
	// follower's proxy hop on every assign.
	headerLeader = "X-Legacy-Leader"
	maxBody      = 1 << 16
)

// errTransport marks failures to reach a node at all, which a client may
// retry on another node.
var errTransport = errors.New("transport failure")

// Error kinds on the wire.
const (
	kindUnavailable = "unavailable"
	kindNotLeader   = "not_leader"
	kindRejected    = "rejected"
)

// wireError is the JSON body of every non-2xx answer.
type wireError struct {
	Error    string `json:"error"`
	Kind     string `json:"kind"`
	LeaderID string `json:"leader_id,omitempty"`
	Leader   string `json:"leader,omitempty"`
}

func encodeError(err error) (int, wireError) {
	var nl *legacy.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return http.StatusServiceUnavailable, wireError{Error: err.Error(), Kind: kindNotLeader, LeaderID: nl.LeaderID, Leader: nl.LeaderHint}
	case errors.Is(err, legacy.ErrRejected):
		return http.StatusBadRequest, wireError{Error: err.Error(), Kind: kindRejected}
	default:
		return http.StatusServiceUnavailable, wireError{Error: err.Error(), Kind: kindUnavailable}
	}
}

func (w wireError) decode() error {
	switch w.Kind {
	case kindNotLeader:
		return &legacy.NotLeaderError{LeaderID: w.LeaderID, LeaderHint: w.Leader, Cause: errors.New(w.Error)}
	case kindRejected:
		return fmt.Errorf("%w: %s", legacy.ErrRejected, w.Error)
	default:
		return fmt.Errorf("%w: %s", legacy.ErrUnavailable, w.Error)
	}
}

// callAllocate returns the answer and the leader a follower forwarded it
// to ("" if addr served it).
func callAllocate(ctx context.Context, hc *http.Client, addr, rangeKey string, count uint64, forwarded bool) (legacy.Result, string, error) {
	q := url.Values{"range": {rangeKey}, "count": {strconv.FormatUint(count, 10)}}
	var res legacy.Result
	leader, err := call(ctx, hc, addr, pathAllocate, q, forwarded, &res)
	return res, leader, err
}

// callWritten returns the leader a follower forwarded the report to.
func callWritten(ctx context.Context, hc *http.Client, addr, rangeKey string, maxWritten uint64, forwarded bool) (string, error) {
	q := url.Values{"range": {rangeKey}, "max": {strconv.FormatUint(maxWritten, 10)}}
	return call(ctx, hc, addr, pathWritten, q, forwarded, nil)
}

// call POSTs to addr and decodes a JSON answer into out (if non-nil); it
// returns the answer's headerLeader. Any transport failure is
// ErrUnavailable: the request may not have arrived.
func call(ctx context.Context, hc *http.Client, addr, path string, q url.Values, forwarded bool, out any) (string, error) {
	u := url.URL{Scheme: "http", Host: addr, Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", legacy.ErrRejected, err)
	}
	if forwarded {
		req.Header.Set(headerForwarded, "1")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: %w: %w", legacy.ErrUnavailable, errTransport, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxBody)
	if resp.StatusCode/100 != 2 {
		var we wireError
		if err := json.NewDecoder(body).Decode(&we); err != nil {
			return "", fmt.Errorf("%w: http %d", legacy.ErrUnavailable, resp.StatusCode)
		}
		return "", we.decode()
	}
	leader := resp.Header.Get(headerLeader)
	if out == nil {
		return leader, nil
	}
	if err := json.NewDecoder(body).Decode(out); err != nil {
		return "", fmt.Errorf("%w: decode %s answer: %w", legacy.ErrUnavailable, path, err)
	}
	return leader, nil
}
