//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/finality"
	"github.com/s-chain/schain/operator/eviction"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/tests/framework/localnet"
)

// The tests of this file stop and kill nodes; the file sorts last so that
// they run after every other test of the package.

func TestY_StopRestart(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := router(t)
	victim := network.Nodes[2]
	owned := ownedRanges(ctx, t, r, "restart", 1)
	require.NoError(network.StopNode(ctx, victim.NodeID))
	// The others keep allocating their own ranges.
	var live string
	for owner, rs := range owned {
		if owner != victim.NodeID {
			live = rs[0]
			break
		}
	}
	rep, err := r.Allocate(ctx, api.AllocateArgs{Range: live, Count: 3})
	require.NoError(err)
	rc, err := r.WaitForReceipt(ctx, rep.TxID)
	require.NoError(err)
	require.Equal(api.StatusAccepted, rc.Status)
	require.NoError(network.StartNode(ctx, victim.NodeID))
	height, _ := agree(ctx, t)
	require.Greater(height, rc.Height-1)
	a, err := nodeClient(t, nodeByID(victim.NodeID)).GetAllocation(ctx, live)
	require.NoError(err)
	require.Equal(rc.Entries[rep.Index].Base+3, a.Next, "the restarted node caught up")
	// Its own ranges continue from the committed counter.
	mine := owned[victim.NodeID][0]
	before, err := r.GetAllocation(ctx, mine)
	require.NoError(err)
	rep, err = r.Allocate(ctx, api.AllocateArgs{Range: mine, Count: 2})
	require.NoError(err)
	rc, err = r.WaitForReceipt(ctx, rep.TxID)
	require.NoError(err)
	require.Equal(before.Next, rc.Entries[rep.Index].Base, "nothing reissued")
}

// TestZ_KillOwner kills -9 the owner of some ranges. Other owners' ranges
// keep allocating throughout, with block gaps while the dead validator is
// an expected proposer; within K+1 liveness rounds the dead owner's ranges
// allocate again through their next HRW candidate, from the committed
// counters. The eviction policy then removes the dead validator from the
// subnet (after `schain validators status` and a dry run of `remove` show
// it out): from a few blocks after the commit on, no range waits for a
// proposer slot again (the gaps are logged against the 1 s target).
// The restarted node is added back with `schain validators add`, and its
// ranges come back to it. No receipt of the whole run overlaps another.
func TestZ_KillOwner(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := router(t)
	victim := network.Nodes[0]
	owned := ownedRanges(ctx, t, r, "kill", 2)
	deadRanges := owned[victim.NodeID]
	var issuedMu sync.Mutex
	issued := map[string][][2]uint64{}
	// alloc waits on the owner until the allocation is accepted (the node
	// answers at acceptance, following re-pins), so that the time it
	// returns is the block's, not the next tick of a client's polling.
	alloc := func(ctx context.Context, rk string, count uint64) (ids.NodeID, error) {
		c, err := r.AllocateCommitted(ctx, api.AllocateArgs{Range: rk, Count: count})
		if err != nil {
			return ids.EmptyNodeID, err
		}
		rep, e := c.Reply, c.Entry
		issuedMu.Lock()
		issued[rk] = append(issued[rk], [2]uint64{e.Base, e.Base + e.Count})
		issuedMu.Unlock()
		return ids.NodeID(rep.Owner), nil
	}
	for _, rk := range deadRanges {
		_, err := alloc(ctx, rk, 5)
		require.NoError(err)
	}
	var liveURIs, liveRanges []string
	var live localnet.Node
	for _, nd := range network.Nodes {
		if nd.NodeID != victim.NodeID {
			liveURIs, live = append(liveURIs, nd.URI), nd
			liveRanges = append(liveRanges, owned[nd.NodeID][0])
		}
	}

	require.NoError(network.KillNode(ctx, victim.NodeID))
	killed := time.Now()
	// Ranges of live owners keep allocating, in closed loops from now on:
	// their longest gaps before the removal are the proposer slots of the
	// dead validator.
	probe := startGapProbe(ctx, liveRanges, alloc)
	defer probe.stop()
	for owner, rs := range owned {
		if owner == victim.NodeID {
			continue
		}
		got, err := alloc(ctx, rs[1], 1)
		require.NoError(err)
		require.Equal(owner, got)
	}
	// Within the liveness rule's bound ((K+1) rounds and the heartbeat
	// lead: 10.5 s locally) every range of the dead owner allocates again,
	// once the first block of the round that drops it is in, and the new
	// owner's transaction after it: each of those blocks, and the parent
	// that makes the round count, waits 5 s for every slot in a row the
	// proposer VM draws for the dead validator at its height (2.5 s on
	// average, 15 s one time in 27; docs/concepts/liveness.md, "What a failover
	// waits for", computes them), plus the client's attempts, each cut
	// after 5 s. Ranges came back 20-45 s after the kill in this test's
	// recent runs and after 56 s once: the bound is the test's deadline
	// (failoverDeadline), not the failover target, which the bench
	// measures. Each range is tried on its own, so one slow attempt
	// delays no other.
	bound := failoverDeadline()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []error
	)
	for _, rk := range deadRanges {
		wg.Add(1)
		go func(rk string) {
			defer wg.Done()
			within, cancelWithin := context.WithDeadline(ctx, killed.Add(bound))
			defer cancelWithin()
			var owner ids.NodeID
			err := poll(within, func() error {
				short, cancelShort := context.WithTimeout(within, 5*time.Second)
				defer cancelShort()
				var err error
				owner, err = alloc(short, rk, 2)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failures = append(failures, fmt.Errorf("range %s still stalled %s after the kill: %w", rk, bound, err))
			case owner == victim.NodeID:
				failures = append(failures, fmt.Errorf("range %s allocated through the dead node", rk))
			default:
				t.Logf("range %s allocates again through %s, %s after the kill", rk, owner, time.Since(killed).Round(time.Second))
			}
		}(rk)
	}
	wg.Wait()
	require.Empty(failures)
	liveClient := nodeClient(t, live)
	ep, err := liveClient.GetMembership(ctx)
	require.NoError(err)
	require.Len(ep.Members, len(network.Nodes)-1)
	for _, v := range ep.Validators {
		require.Equal(ids.NodeID(v.NodeID) != victim.NodeID, v.Member, "validator %s", v.NodeID)
	}

	// With one validator of four dead the others hold more than 2/3 of the
	// stake: writes still become final, certified without the dead one's
	// signature. (Of three equal validators a certificate needs all three,
	// and finality stopped until the dead one came back.)
	c, err := r.AllocateCommitted(ctx, api.AllocateArgs{Range: liveRanges[0], Count: 1})
	require.NoError(err)
	acceptedAt := time.Now()
	finalCtx, cancelFinal := context.WithTimeout(ctx, 2*time.Minute)
	rc, err := r.WaitFinal(finalCtx, c.Receipt.TxID)
	rcFinal := time.Now()
	cancelFinal()
	require.NoError(err, "a write accepted after the kill becomes final")
	require.True(rc.Final)
	pnode := subnet.NewNode(live.URI)
	vs, err := subnet.CertificateSet(ctx, pnode, network.ChainID, rc.Certificate.PChainHeight, 0, 0)
	require.NoError(err)
	require.Len(vs.Validators, len(network.Nodes), "the dead validator is still in the P-chain's set")
	proof, err := finality.ProveReceipt(ctx, r.GetBlock, rc, vs.NetworkID, network.ChainID, vs)
	require.NoError(err)
	require.Less(proof.Signers, len(network.Nodes), "the dead validator did not sign")
	t.Logf("a write accepted %s after the kill was final %s later: %d of %d validators signed",
		acceptedAt.Sub(killed).Round(time.Second), rcFinal.Sub(acceptedAt).Round(time.Millisecond), proof.Signers, len(vs.Validators))

	// What the operator sees: the dead validator out, and a removal that
	// would pass every check.
	key, err := network.OwnerKey()
	require.NoError(err)
	code, out, errOut := schainCLI(ctx, t, liveURIs, "validators", "status", "--json")
	require.Equal(0, code, errOut)
	var status struct {
		Validators []eviction.Standing `json:"validators"`
	}
	require.NoError(json.Unmarshal([]byte(out), &status))
	require.Len(status.Validators, len(network.Nodes))
	for _, s := range status.Validators {
		require.True(s.OnPChain && s.InMembershipView, "validator %s", s.NodeID)
		require.Equal(s.NodeID == victim.NodeID, s.OutRounds > 0, "validator %s out for %d rounds", s.NodeID, s.OutRounds)
	}
	code, out, errOut = schainCLI(ctx, t, liveURIs, "validators", "remove", victim.NodeID.String(), "--dry-run", "--json", "--key-file", network.OwnerKeyPath())
	require.Equal(0, code, errOut)
	var dry struct {
		Plan    subnet.Plan     `json:"plan"`
		DryRun  bool            `json:"dryRun"`
		Receipt *subnet.Receipt `json:"receipt"`
	}
	require.NoError(json.Unmarshal([]byte(out), &dry))
	require.True(dry.DryRun)
	require.Nil(dry.Receipt)
	require.Equal(subnet.Remove, dry.Plan.Action)
	require.Equal(victim.NodeID, dry.Plan.NodeID)
	require.Equal(len(network.Nodes)-1, dry.Plan.ValidatorsAfter)
	require.Positive(dry.Plan.FeeNAVAX)
	// A live member is refused (exit 8) unless forced.
	code, _, errOut = schainCLI(ctx, t, liveURIs, "validators", "remove", live.NodeID.String(), "--dry-run", "--key-file", network.OwnerKeyPath())
	require.Equal(8, code, errOut)
	require.Contains(errOut, "is a member of S-Chain's current membership")

	// The policy (out for one liveness round) removes the dead validator.
	_, beforeStats := probe.read()
	admin := subnet.NewAdmin(live.URI, network.SubnetID, key)
	// Fresh reads of the live nodes: they hold 3/4 of the stake.
	liveRouter, err := client.NewRouter(liveURIs, network.ChainID.String(), client.DefaultRouterConfig())
	require.NoError(err)
	w := &eviction.Watcher{Policy: eviction.Policy{After: 1, MinValidators: 2}, Memberships: liveRouter.Fresh(), Subnet: admin}
	outcome, err := w.Pass(ctx)
	require.NoError(err)
	require.Equal(victim.NodeID, outcome.Decision.NodeID, outcome.Decision.Reason)
	require.NotNil(outcome.Receipt)
	removed := time.Now()
	t.Logf("removed %s from the subnet %s after the kill: tx %s, P-chain height %d",
		victim.NodeID, removed.Sub(killed).Round(time.Second), outcome.Receipt.TxID, outcome.Receipt.PChainHeight)
	before := longestOf(beforeStats)
	t.Logf("before the removal (%s of closed-loop allocations after the kill): %s", removed.Sub(killed).Round(time.Second), describeGaps(beforeStats))
	require.Greater(before, 3*time.Second, "the probe saw the dead validator's proposer slots")

	// The proposer VM builds every block on its node's current P-chain
	// height and draws a block's proposers from its parent's: from the
	// child of the first block built after the commit on, nobody waits for
	// the dead validator's slots, before S-Chain's membership view (which follows the
	// P-chain at its next ACP-181 epoch) shows anything.
	follow, cancelFollow := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelFollow()
	waitHeights(follow, t, live, 3)
	probe.window(liveRanges)
	require.NoError(poll(follow, func() error {
		e, err := liveClient.GetMembership(follow)
		if err != nil {
			return err
		}
		for _, v := range e.Validators {
			if ids.NodeID(v.NodeID) == victim.NodeID {
				return fmt.Errorf("membership at P-chain height %d still lists %s", e.PChainHeight, victim.NodeID)
			}
		}
		return nil
	}))
	t.Logf("S-Chain's membership view dropped %s %s after the removal", victim.NodeID, time.Since(removed).Round(time.Second))
	took, betweenStats := probe.read()
	t.Logf("from 3 heights after the commit until S-Chain's membership view followed (%s): %s", took.Round(time.Millisecond), describeGaps(betweenStats))
	for rk, s := range betweenStats {
		require.Less(s.Longest, slotFree, "range %s: a wait for a proposer slot after the removal was committed", rk)
	}
	// The block that opens S-Chain's new epoch re-pins the work pending
	// against the old one (docs/concepts/rules.md, Re-pinning): the window starts after it,
	// and what the re-pin costs is logged.
	probe.window(liveRanges)
	waitHeights(follow, t, live, 3)
	took, repinStats := probe.read()
	t.Logf("while S-Chain's new epoch opened (%s, 3 heights): %s", took.Round(time.Millisecond), describeGaps(repinStats))
	probe.window(liveRanges)
	// 150 heights (about 10 s here): were the dead validator still drawn
	// for a third of the heights, the chance of no gap among them would be
	// (2/3)^150, about 1e-26.
	const heights = 150
	waitHeights(follow, t, live, heights)
	took, afterStats := probe.read()
	probe.stop()
	t.Logf("after the removal (%s, %d heights): %s", took.Round(time.Millisecond), heights, describeGaps(afterStats))
	for rk, s := range afterStats {
		require.Less(s.Longest, slotFree, "range %s: a wait for a proposer slot after the removal", rk)
		require.Greater(s.Count, 10, "range %s kept allocating", rk)
	}

	// The node comes back as a non-validator, and `schain validators add`
	// makes it a validator again.
	require.NoError(network.StartNode(ctx, victim.NodeID))
	restarted := time.Now()
	// `add` refuses a node the live ones are not connected to yet.
	connected, cancelConnected := context.WithTimeout(ctx, time.Minute)
	defer cancelConnected()
	require.NoError(poll(connected, func() error {
		code, _, errOut := schainCLI(connected, t, liveURIs, "validators", "add", victim.NodeID.String(), "--dry-run", "--key-file", network.OwnerKeyPath())
		if code != 0 {
			return fmt.Errorf("add --dry-run: exit %d: %s", code, errOut)
		}
		return nil
	}))
	code, out, errOut = schainCLI(ctx, t, liveURIs, "validators", "add", victim.NodeID.String(), "--wait", "--json", "--key-file", network.OwnerKeyPath())
	require.Equal(0, code, errOut)
	var added struct {
		Plan                 subnet.Plan     `json:"plan"`
		Receipt              *subnet.Receipt `json:"receipt"`
		MembershipFollowedMs *int64          `json:"membershipFollowedMs"`
	}
	require.NoError(json.Unmarshal([]byte(out), &added))
	require.NotNil(added.Receipt)
	require.NotNil(added.MembershipFollowedMs)
	require.Equal(dry.Plan.Weight, added.Plan.Weight, "the default weight is the one the others have")
	t.Logf("added %s back: S-Chain's membership view listed it %s after the commit, %s after its restart",
		victim.NodeID, time.Duration(*added.MembershipFollowedMs)*time.Millisecond, time.Since(restarted).Round(time.Second))
	agree(ctx, t)
	// Its heartbeat lands in the epoch its addition reached S-Chain in;
	// from the next one it owns its ranges again.
	back, cancelBack := context.WithDeadline(ctx, time.Now().Add(bound))
	defer cancelBack()
	require.NoError(poll(back, func() error {
		for _, rk := range deadRanges {
			o, err := liveClient.GetOwner(ctx, rk)
			if err != nil {
				return err
			}
			if ids.NodeID(o.Owner) != victim.NodeID {
				return fmt.Errorf("range %s still owned by %s", rk, o.Owner)
			}
		}
		return nil
	}))
	t.Logf("ownership returned %s after the restart", time.Since(restarted).Round(time.Second))
	for _, rk := range deadRanges {
		owner, err := alloc(ctx, rk, 3)
		require.NoError(err)
		require.Equal(victim.NodeID, owner)
	}
	for rk, ivs := range issued {
		slices.SortFunc(ivs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
		for i := 1; i < len(ivs); i++ {
			require.LessOrEqual(ivs[i-1][1], ivs[i][0], "range %s: %v overlaps %v", rk, ivs[i-1], ivs[i])
		}
		// Every node accepts a block at its own pace: wait for the
		// restarted one to have accepted the last allocation too.
		require.NoError(poll(ctx, func() error {
			a, err := nodeClient(t, victim).GetAllocation(ctx, rk)
			if err == nil && a.Next < ivs[len(ivs)-1][1] {
				err = fmt.Errorf("range %s: the restarted node is at %d, the last allocation ends at %d", rk, a.Next, ivs[len(ivs)-1][1])
			}
			return err
		}))
	}
}

// slotFree bounds the gaps once the dead validator is removed: half of the
// proposer VM's 5 s slot, so that waiting out any slot of the dead
// validator fails the test, while the consensus latency of a loaded 2-core
// machine does not (the target, no gap above 1 s, is reported by
// the logs: 0.25-0.6 s on a quiet machine, up to 1.2 s at load average 20).
const slotFree = 2500 * time.Millisecond

// waitHeights waits until node nd has accepted n more blocks.
func waitHeights(ctx context.Context, t *testing.T, nd localnet.Node, n uint64) {
	t.Helper()
	c := nodeClient(t, nd)
	start, err := c.GetNode(ctx)
	require.NoError(t, err)
	require.NoError(t, poll(ctx, func() error {
		info, err := c.GetNode(ctx)
		if err != nil {
			return err
		}
		if info.Height < start.Height+n {
			return fmt.Errorf("height %d, waiting for %d", info.Height, start.Height+n)
		}
		return nil
	}))
}

// failoverDeadline is how long the kill and partition tests wait for a
// dead or cut-off owner's ranges to allocate again: the liveness rule's
// bound and 90 s for the blocks that follow. Each of those (up to four:
// the parent that makes a round count, the opening block, the new owner's
// write, one more when a gap swallowed a round) waits 5 s for every slot
// in a row the proposer VM draws for the missing validator, one in three
// per slot with three equal validators; 90 s is 18 such slots, which four
// heights reach about twice in a million runs, where 60 s (12) would be
// reached about once in a thousand. The tests measured 20-56 s.
func failoverDeadline() time.Duration {
	return localnet.FailoverBound(localnet.RoundDuration, localnet.LivenessRounds) + 90*time.Second
}
