package legacyraft

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// StartLocalCluster's nodes get ports that stayed bound from the moment they
// were chosen: a port released and bound again later could be taken by a
// test running in parallel (the CI failure "bind: address already in use").
func TestBoundPeersHoldTheirPortsUntilTheNodeTakesThem(t *testing.T) {
	require := require.New(t)
	groups := DefaultConfig().Groups
	peers, err := bindLocalPeers(2, ModeSlots)
	require.NoError(err)
	for _, b := range peers {
		require.Len(b.raft, groups)
		host, port, err := net.SplitHostPort(b.peer.RaftAddr)
		require.NoError(err)
		first, err := strconv.Atoi(port)
		require.NoError(err)
		for g := range groups {
			addr := net.JoinHostPort(host, strconv.Itoa(first+g))
			_, err := net.Listen("tcp", addr)
			require.Error(err, "raft port of group %d is held", g)
			tr, err := b.transport(g, raft.ServerAddress(addr))
			require.NoError(err)
			require.Equal(raft.ServerAddress(addr), tr.LocalAddr(), "the transport serves the held listener")
			require.NoError(tr.(raft.WithClose).Close())
		}
		_, err = net.Listen("tcp", b.peer.HTTPAddr)
		require.Error(err, "HTTP port is held")
		_, err = b.transport(0, raft.ServerAddress(b.peer.HTTPAddr))
		require.ErrorContains(err, "config says")
		_, err = b.transport(groups, raft.ServerAddress(b.peer.RaftAddr))
		require.ErrorContains(err, "bound raft ports")
		b.close()
		l, err := net.Listen("tcp", b.peer.HTTPAddr)
		require.NoError(err, "closed with its peer")
		require.NoError(l.Close())
	}
}

// A client that starts at a follower pays the forward once: the follower
// names the leader it forwarded to, and the client sends the next requests
// there, as SeaweedFS clients follow the master leader. Before, the legacy
// stand-in's throughput in `make bench` swung 3x between runs, by whether
// the client's first address happened to be the elected leader.
func TestClientMovesToTheLeaderAFollowerForwardedTo(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := StartLocalCluster(ctx, 3, ModeSeaweedFS, t.TempDir())
	require.NoError(err)
	defer func() { require.NoError(c.Close()) }()
	addrs := c.Addrs()
	probe := NewClient(addrs, 2*time.Second)
	leader := func() string {
		for _, a := range addrs {
			if s, err := probe.Status(ctx, a); err == nil && slices.Contains(addrs, s.LeaderHTTP) {
				return s.LeaderHTTP
			}
		}
		return ""
	}
	// steady runs check with the leader known before and after it; an
	// election in between (a loaded machine can miss a heartbeat) makes the
	// check say nothing, so it is run again.
	steady := func(name string, check func(leader string, followers []string) error) {
		var err error
		require.Eventually(func() bool {
			before := leader()
			if before == "" {
				return false
			}
			var followers []string
			for _, a := range addrs {
				if a != before {
					followers = append(followers, a)
				}
			}
			err = check(before, followers)
			return leader() == before
		}, 30*time.Second, 50*time.Millisecond, "%s: the leader kept changing", name)
		require.NoError(err, name)
	}
	prefers := func(cl *Client, want, why string) error {
		if got := cl.preferred; got != want {
			return fmt.Errorf("%s: prefers %s, want %s", why, got, want)
		}
		return nil
	}

	steady("allocate", func(leader string, followers []string) error {
		cl := NewClient(append(slices.Clone(followers), leader), 2*time.Second)
		if _, err := cl.Allocate(ctx, "r", 1); err != nil {
			return err
		}
		if err := prefers(cl, leader, "moved to the leader after one forwarded allocation"); err != nil {
			return err
		}
		if _, err := cl.Allocate(ctx, "r", 1); err != nil {
			return err
		}
		return prefers(cl, leader, "stays with the leader")
	})
	steady("report", func(leader string, followers []string) error {
		wr := NewClient(append(slices.Clone(followers), leader), 2*time.Second)
		if err := wr.ReportWritten(ctx, "r", 1); err != nil {
			return err
		}
		return prefers(wr, leader, "a forwarded report moves it too")
	})
	steady("outside", func(_ string, followers []string) error {
		alone := NewClient(followers[:1], 2*time.Second)
		if _, err := alone.Allocate(ctx, "r", 1); err != nil {
			return err
		}
		return prefers(alone, followers[0], "a leader outside the client's addresses is not followed")
	})
}
