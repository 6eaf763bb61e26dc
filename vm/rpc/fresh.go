package rpc

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/vm/api"
)

// Why a node refuses to answer from its accepted state. The design's rule:
// missing or stale state answers NotReady, never an old answer that looks
// current.
var (
	// ErrBootstrapping: avalanchego is bootstrapping the chain (a node
	// restarted, perhaps from an old copy of its database): its accepted
	// state may be far behind, and it answers nothing from it.
	ErrBootstrapping = errcode.New(errcode.NotReady, "bootstrapping", "rpc: this node is bootstrapping the chain: its state may be old; ask another node or retry")
	// ErrBehindPeers: validators holding more than a third of the stake
	// accepted blocks far above this node's last accepted one.
	ErrBehindPeers = errcode.New(errcode.NotReady, "behind_peers", "rpc: this node is behind the other validators: its state is old; ask another node or retry")
	// ErrBelowMinHeight: the read asked for state at least as new as a
	// height this node has not accepted yet.
	ErrBelowMinHeight = errcode.New(errcode.NotReady, "below_min_height", "rpc: this node has not accepted the height the read asks for yet; ask another node or retry")
	// ErrNotAcceptedYet: a block (or its certificate) above this node's
	// last accepted block. Another node may have it: a node that lags
	// must not answer that it does not exist.
	ErrNotAcceptedYet = errcode.New(errcode.NotReady, "not_accepted_yet", "rpc: this node has not accepted a block at this height yet; ask another node or retry")
)

// MaxLag is how many blocks a node may be behind what its peers accepted
// and still answer reads: a node a block or two behind is normal (it
// learns of a block a poll later), a node further behind has stopped
// following the chain (partitioned, paused, catching up after a restart).
// Reads that must not go back in time ask for a least height instead
// (api.AtLeast), which is exact.
const MaxLag = 32

// Peers is what the node knows of how far the other validators got (the
// certifier, from their pushed signatures).
type Peers interface {
	// PeersHeight is the newest height validators holding more than a
	// third of the stake accepted (false: none known yet).
	PeersHeight() (uint64, bool)
}

// freshness decides whether this node may answer from its accepted state.
// It is safe for concurrent use.
type freshness struct {
	reads Reads
	peers Peers
	// bootstrapping is set while avalanchego bootstraps the chain
	// (VM.SetState).
	bootstrapping atomic.Bool
}

// lagError is a freshness refusal with this node's last accepted height,
// which the answer's data names.
type lagError struct {
	err      error
	accepted uint64
}

func (e *lagError) Error() string { return e.err.Error() }
func (e *lagError) Unwrap() error { return e.err }

// notReady is why this node answers reads NotReady now, or nil: it is
// bootstrapping, or more than MaxLag blocks behind its peers.
func (f *freshness) notReady() error {
	last := f.reads.LastAccepted().Block.Height
	if f.bootstrapping.Load() {
		return &lagError{ErrBootstrapping, last}
	}
	if peers, ok := f.peers.PeersHeight(); ok && peers > last+MaxLag {
		return &lagError{fmt.Errorf("%w (last accepted height %d, validators with more than a third of the stake at %d)", ErrBehindPeers, last, peers), last}
	}
	return nil
}

// head is this node's last accepted block for a read asking for at least
// minHeight, read before the state the answer comes from (so the answer is
// at least as new as the head), or why it may not answer.
func (f *freshness) head(minHeight uint64) (api.Head, error) {
	last := f.reads.LastAccepted()
	h := api.Head{AcceptedHeight: last.Block.Height, AcceptedID: last.ID()}
	if err := f.notReady(); err != nil {
		return h, err
	}
	if h.AcceptedHeight < minHeight {
		return h, &lagError{fmt.Errorf("%w (asked for at least %d, last accepted %d)", ErrBelowMinHeight, minHeight, h.AcceptedHeight), h.AcceptedHeight}
	}
	return h, nil
}

// accepted refuses a height above the head.
func accepted(head api.Head, height uint64) error {
	if height <= head.AcceptedHeight {
		return nil
	}
	return &lagError{fmt.Errorf("%w: height %d (last accepted %d)", ErrNotAcceptedYet, height, head.AcceptedHeight), head.AcceptedHeight}
}

// reason is the named reason of a freshness refusal ("" for none).
func reason(err error) string {
	if err == nil {
		return ""
	}
	_, r := errcode.Of(err)
	return r
}

// acceptedOf is the last accepted height a freshness refusal names.
func acceptedOf(err error) (uint64, bool) {
	var le *lagError
	if errors.As(err, &le) {
		return le.accepted, true
	}
	return 0, false
}
