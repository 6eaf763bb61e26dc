//go:build e2e

// Package onenode runs S-Chain on a network of one validator
// (`schain network start --nodes 1`): sybil protection on, the subnet's
// only validator on the P-chain, and the same consensus, Verify, Accept
// and finality path as four nodes with a quorum of one voter.
package onenode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/config"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/finality"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
)

// TestOneValidator starts a one-node network, allocates on several ranges
// and checks every receipt accepted once, then final with a certificate
// that checks out offline against the P-chain's validator set of the
// subnet: the one node, with sybil protection on.
func TestOneValidator(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := localnet.DefaultConfig(localnettest.BuildDir())
	cfg.Nodes = 1
	cfg.RootDir = filepath.Join(localnettest.BuildDir(), "e2e-onenode")
	cfg.Progress = os.Stderr
	_ = localnet.StopAll(ctx, cfg.RootDir, nil) // left by an interrupted run
	n, err := localnet.Start(ctx, cfg)
	require.NoError(err)
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer scancel()
		if err := localnet.StopAll(sctx, cfg.RootDir, nil); err != nil {
			t.Logf("stopping the network: %v", err)
		}
	})
	require.Len(n.Nodes, 1)
	nd := n.Nodes[0]

	// The node runs with sybil protection on, as tmpnet would not have it.
	require.Equal("true", nodeFlag(t, n, config.SybilProtectionEnabledKey))

	// The P-chain's validator set of the subnet is the node alone.
	pnode := subnet.NewNode(nd.URI)
	facts, err := subnet.Read(ctx, pnode, n.SubnetID)
	require.NoError(err)
	require.Len(facts.Validators, 1)
	require.Equal(nd.NodeID, facts.Validators[0].NodeID)

	ccfg := client.DefaultConfig()
	ccfg.Token = n.Token
	c, err := client.New(nd.URI, n.ChainID.String(), ccfg)
	require.NoError(err)
	var m *api.MembershipReply
	require.Eventually(func() bool {
		m, err = c.GetMembership(ctx)
		return err == nil
	}, 2*time.Minute, 200*time.Millisecond, "the chain opens its first membership")
	require.Len(m.Members, 1)
	require.Equal(api.NodeID(nd.NodeID), m.Members[0].NodeID)

	// Allocations on several ranges: each accepted, ids never overlapping.
	next := map[string]uint64{}
	var last *api.ReceiptReply
	for i := range 12 {
		rangeKey := []string{"a", "b", "c"}[i%3]
		rep, err := c.Allocate(ctx, api.AllocateArgs{Range: rangeKey, Count: 5})
		require.NoError(err)
		rc, err := c.WaitForReceipt(ctx, rep.TxID)
		require.NoError(err)
		require.Equal(api.StatusAccepted, rc.Status)
		e := rc.Entries[rep.Index]
		require.Equal(next[rangeKey], e.Base, "range %s continues where it stopped", rangeKey)
		next[rangeKey] = e.Base + e.Count
		last = rc
	}

	// The last one becomes final; its certificate is the one validator's
	// signature and checks against the P-chain's set.
	rc, err := c.WaitFinal(ctx, last.TxID)
	require.NoError(err)
	require.True(rc.Final)
	vs, err := subnet.CertificateSet(ctx, pnode, n.ChainID, rc.Certificate.PChainHeight, 0, 0)
	require.NoError(err)
	require.Positive(vs.ChainCreatedAt, "the chain's creation height, from the P-chain")
	proof, err := finality.ProveReceipt(ctx, c.GetBlock, rc, vs.NetworkID, n.ChainID, vs)
	require.NoError(err)
	require.True(certificate.Supermajority(proof.SignedWeight, proof.TotalWeight))
	require.Equal(proof.TotalWeight, proof.SignedWeight, "one voter holds all the stake")
}

// nodeFlag reads a flag from the node's config file as tmpnet wrote it.
func nodeFlag(t *testing.T, n *localnet.Network, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.Dir, n.Nodes[0].NodeID.String(), "flags.json"))
	require.NoError(t, err)
	var flags map[string]any
	require.NoError(t, json.Unmarshal(b, &flags))
	v, _ := flags[key].(string)
	return v
}
