package legacyraft

import (
	"net"
	"strconv"
	"testing"

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
