package benchmark

import (
	"context"
	"time"
)

// System is an id allocator as the load generator sees it: count contiguous
// ids [first, first+n) of rangeKey per call. Implementations must be safe for
// concurrent use; an error means no ids were handed to the caller.
type System interface {
	Allocate(ctx context.Context, rangeKey string, count uint64) (first, n uint64, err error)
}

// Cluster is a running multi-node System the bench can crash and must stop.
type Cluster interface {
	System
	// Owners names, for each range key, the node that serves its writes now
	// (the legacy leader of its raft group; the S-Chain owner of its membership).
	Owners(ctx context.Context, ranges []string) ([]string, error)
	// Kill crashes node (SIGKILL, no shutdown: the signal is sent at once)
	// and returns once the process is gone; the cluster keeps running
	// without it.
	Kill(ctx context.Context, node string) error
	// Stop stops every node and releases what the cluster holds; it is safe
	// to call after Kill and more than once.
	Stop(ctx context.Context) error
}

// Target is one system under test with what the report needs to know of it.
type Target struct {
	// Name labels the system in tables, plots and JSON ("legacy-seaweedfs").
	Name string
	// SChain marks the S-Chain side; ratios are S-Chain over each legacy.
	SChain bool
	// SharedKeySpace means ids come from one sequence for every range (the
	// SeaweedFS file-key sequencer), so ids issued twice are searched across
	// ranges instead of within each range.
	SharedKeySpace bool
	// FailoverAfter is how long the failover phase runs after the kill: long
	// enough for the system's own recovery (a raft election; S-Chain
	// re-pinning a dead owner's ranges after a few liveness rounds). Zero skips the
	// system's failover phase.
	FailoverAfter time.Duration
	// Network, if set, names the ids' source: targets with the same Network
	// (two write paths of one S-Chain network) issue ids from the same
	// counters, so their allocations are checked for ids issued twice
	// together, not each on its own.
	Network string
	Cluster Cluster
	// Membership, if set, is watched during the run (once per Network):
	// what the liveness rule did to the members under load and after the
	// kill (Flaps). NodeName turns a NodeID into the name Owners uses.
	Membership MembershipSource
	NodeName   func(nodeID string) string
	// Finality, if set, is read around each steady round: accept →
	// certificate latency under the target's load (SystemReport.Finality).
	Finality FinalitySource
	// CPU, if set, is read around each steady round: the CPU time the
	// system's processes spent per answered request (SystemReport.CPU).
	CPU CPUSource
	// Baseline, if set, names the system this one is the baseline of: the
	// same write path without one feature (schain-uncertified: schain
	// without finality certificates). The report gives their ratio.
	Baseline string
}

// BusiestNode returns the node that appears most often in owners (the
// first of equals in order of appearance; empty names are skipped): the
// node whose crash hurts the most ranges, which is the one a failover
// benchmark kills.
func BusiestNode(owners []string) string {
	n := map[string]int{}
	var order []string
	for _, x := range owners {
		if x == "" {
			continue
		}
		if n[x] == 0 {
			order = append(order, x)
		}
		n[x]++
	}
	best := ""
	for _, x := range order {
		if best == "" || n[x] > n[best] {
			best = x
		}
	}
	return best
}
