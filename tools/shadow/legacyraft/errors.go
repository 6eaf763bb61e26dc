package legacyraft

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var (
	// ErrNoRoute means the range's hash slot has no group in the current
	// route table; the request is not sent to any other group.
	ErrNoRoute = fmt.Errorf("%w: no route for slot", legacy.ErrUnavailable)
	// ErrNoLeader means the responsible raft group has no known leader.
	ErrNoLeader = fmt.Errorf("%w: no leader", legacy.ErrUnavailable)
	// ErrWarmingUp means a new seaweedfs-mode leader is still in its warm-up
	// period, like the real master answering 503 after an election.
	ErrWarmingUp = fmt.Errorf("%w: leader warming up", legacy.ErrUnavailable)
	// ErrNoVolume means no volume id has been committed yet.
	ErrNoVolume = fmt.Errorf("%w: no writable volume", legacy.ErrUnavailable)
	// ErrSaturated means a group's bounded queue is full.
	ErrSaturated = fmt.Errorf("%w: queue saturated", legacy.ErrUnavailable)
	// ErrClosed means the node is shutting down.
	ErrClosed = fmt.Errorf("%w: node closed", legacy.ErrUnavailable)

	errWrongGroup = fmt.Errorf("%w: slot owned by another group", legacy.ErrUnavailable)
	errBadCount   = fmt.Errorf("%w: bad count", legacy.ErrRejected)
	errBadRange   = fmt.Errorf("%w: empty range", legacy.ErrRejected)
)

// isNotLeader reports whether err is a raft leadership failure.
func isNotLeader(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress)
}
