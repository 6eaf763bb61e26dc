package avanet

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/subnet"
)

// TestCreate: the network's genesis is one avalanchego accepts for its
// network ID, with every node an initial validator and the network's key
// funded; each node bootstraps from every other, on its own address, with
// its keys in place and its config directories made.
func TestCreate(t *testing.T) {
	require := require.New(t)
	dir := t.TempDir()
	var places []Place
	for _, a := range []string{"198.18.7.1", "198.18.7.2", "198.18.7.3"} {
		places = append(places, Place{Addr: netip.MustParseAddr(a), Wrap: []string{"ip", "netns", "exec", "h"}})
	}
	n, err := Create(Config{Dir: dir, AvalancheGo: "/bin/true", PluginDir: dir, Places: places})
	require.NoError(err)
	require.Len(n.Nodes, 3)

	stake := genesis.LocalParams.StakingConfig
	_, _, err = genesis.FromFile(n.NetworkID, filepath.Join(dir, "genesis.json"), &stake)
	require.NoError(err, "avalanchego accepts the genesis")
	var g genesis.UnparsedConfig
	b, err := os.ReadFile(filepath.Join(dir, "genesis.json"))
	require.NoError(err)
	require.NoError(json.Unmarshal(b, &g))
	require.Len(g.InitialStakers, 3)
	for i, nd := range n.Nodes {
		require.Equal(nd.NodeID, g.InitialStakers[i].NodeID)
		require.NotNil(g.InitialStakers[i].Signer, "a BLS proof of possession")
	}
	key, err := subnet.ReadKey(n.KeyPath)
	require.NoError(err)
	require.Equal(n.Key.Address(), key.Address())
	funded := false
	for _, a := range g.Allocations {
		_, _, raw, err := address.Parse(a.AVAXAddr)
		require.NoError(err)
		addr, err := ids.ToShortID(raw)
		require.NoError(err)
		if addr == key.Address() && len(a.UnlockSchedule) > 0 && a.UnlockSchedule[0].Locktime == 0 {
			funded = true
		}
	}
	require.True(funded, "the key has unlocked AVAX on the P-chain")

	for i, nd := range n.Nodes {
		flags := map[string]any{}
		b, err := os.ReadFile(nd.config)
		require.NoError(err)
		require.NoError(json.Unmarshal(b, &flags))
		require.Equal(places[i].Addr.String(), flags[config.PublicIPKey])
		require.Equal(places[i].Addr.String(), flags[config.HTTPHostKey])
		require.EqualValues(StakingPort, flags[config.StakingPortKey])
		ids, ips := flags[config.BootstrapIDsKey].(string), flags[config.BootstrapIPsKey].(string)
		for j, o := range n.Nodes {
			if i == j {
				require.NotContains(ids, o.NodeID.String())
				continue
			}
			require.Contains(ids, o.NodeID.String())
			require.Contains(ips, o.Staking.String())
		}
		for _, f := range []string{"staker.crt", "staker.key", "signer.key"} {
			st, err := os.Stat(filepath.Join(nd.Dir, "staking", f))
			require.NoError(err)
			require.Equal(os.FileMode(0o600), st.Mode().Perm())
		}
		require.DirExists(nd.ChainConfigDir())
		require.DirExists(nd.SubnetConfigDir())
		require.Equal("http://"+places[i].Addr.String()+":9650", nd.URI)
	}
	_, err = Create(Config{Dir: t.TempDir(), Places: places, NetworkID: constants.LocalID})
	require.ErrorContains(err, "built-in")
}
