//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tests/localnet"
	"github.com/s-chain/schain/vm/api"
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
// keep allocating throughout; within K+1 liveness epochs the dead owner's
// ranges allocate again through their next HRW candidate, from the
// committed counters; after the old owner restarts and heartbeats, its
// ranges come back to it. No receipt of the whole run overlaps another.
func TestZ_KillOwner(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	r := router(t)
	victim := network.Nodes[0]
	owned := ownedRanges(ctx, t, r, "kill", 2)
	deadRanges := owned[victim.NodeID]
	var issuedMu sync.Mutex
	issued := map[string][][2]uint64{}
	alloc := func(ctx context.Context, rk string, count uint64) (ids.NodeID, error) {
		rep, err := r.Allocate(ctx, api.AllocateArgs{Range: rk, Count: count})
		if err != nil {
			return ids.EmptyNodeID, err
		}
		rc, err := r.WaitForReceipt(ctx, rep.TxID)
		if err != nil {
			return ids.EmptyNodeID, err
		}
		if rc.Status != api.StatusAccepted {
			return ids.EmptyNodeID, fmt.Errorf("receipt %s: %s", rc.Status, rc.Error)
		}
		e := rc.Entries[rep.Index]
		issuedMu.Lock()
		issued[rk] = append(issued[rk], [2]uint64{e.Base, e.Base + e.Count})
		issuedMu.Unlock()
		return rep.Owner, nil
	}
	for _, rk := range deadRanges {
		_, err := alloc(ctx, rk, 5)
		require.NoError(err)
	}

	require.NoError(network.KillNode(ctx, victim.NodeID))
	killed := time.Now()
	// Ranges of live owners keep allocating.
	for owner, rs := range owned {
		if owner == victim.NodeID {
			continue
		}
		got, err := alloc(ctx, rs[1], 1)
		require.NoError(err)
		require.Equal(owner, got)
	}
	// Within K+1 epochs of the kill every range of the dead owner allocates
	// again, once the first block of that epoch is in: up to 15 s later if
	// the dead validator is that height's expected proposer two or three
	// slots in a row (the proposer VM's 5 s slots), plus the client's
	// retries. Each range is tried on its own, so one slow attempt delays
	// no other.
	bound := time.Duration(localnet.LivenessEpochs+1)*localnet.EpochDuration + 30*time.Second
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
	ep, err := nodeClient(t, network.Nodes[1]).GetEpoch(ctx)
	require.NoError(err)
	require.Len(ep.Members, len(network.Nodes)-1)
	for _, v := range ep.Validators {
		require.Equal(v.NodeID != victim.NodeID, v.Member, "validator %s", v.NodeID)
	}

	require.NoError(network.StartNode(ctx, victim.NodeID))
	restarted := time.Now()
	agree(ctx, t)
	// Its heartbeat lands in the epoch it restarted in; from the next one it
	// owns its ranges again.
	back, cancelBack := context.WithDeadline(ctx, restarted.Add(bound))
	defer cancelBack()
	require.NoError(poll(back, func() error {
		for _, rk := range deadRanges {
			o, err := nodeClient(t, network.Nodes[1]).GetOwner(ctx, rk)
			if err != nil {
				return err
			}
			if o.Owner != victim.NodeID {
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
