//go:build e2e

package operations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/deploy"
	"github.com/s-chain/schain/tests/framework/avanet"
	"github.com/s-chain/schain/tests/framework/hosts"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
	vmconfig "github.com/s-chain/schain/vm/config"
)

// needHosts skips where hosts cannot be made, saying why, and removes what
// an interrupted run left.
func needHosts(t *testing.T) {
	t.Helper()
	if err := hosts.Available(); err != nil {
		t.Skipf("multihost: %v (run `make e2e` as root on Linux to include it)", err)
	}
	if err := hosts.EnsureTools(); err != nil {
		t.Skipf("multihost: %v", err)
	}
	require.NoError(t, hosts.Sweep())
}

// chain is S-Chain deployed on a plain avalanchego network of hosts, as
// docs/operating/deployment.md has an operator do it.
type chain struct {
	net     *avanet.Network
	record  *deploy.Record
	token   string
	tokFile string
	router  *client.Router
}

// deployChain runs `schain deploy` onto the running network: the first run
// stops for the nodes' configuration; then each node gets the chain config
// (a write token), the subnet's consensus parameters and --track-subnets,
// and a restart; the second run creates the chain; a third changes nothing;
// `schain deploy status` agrees. The chain config is written in the form
// every plugin since write tokens reads (no field a plugin of an earlier
// commit would refuse).
func deployChain(t *testing.T, ctx context.Context, root string, an *avanet.Network, genesis []byte) *chain {
	t.Helper()
	require := require.New(t)
	gen := filepath.Join(root, "genesis.json")
	require.NoError(os.WriteFile(gen, genesis, 0o644))
	record := filepath.Join(root, "deploy.json")
	args := []string{"deploy", "--json", "--key-file", an.KeyPath, "--genesis", gen, "--record", record}
	for _, nd := range an.Nodes {
		args = append(args, "--node", nd.URI)
	}
	var res deploy.Result
	require.Equal(6, schain(t, ctx, &res, args...), "the first run waits for the nodes")
	rec := res.Record
	require.NotEmpty(res.Pending)

	c := &chain{net: an, tokFile: filepath.Join(root, "token")}
	var err error
	c.token, err = vmconfig.GenerateToken()
	require.NoError(err)
	require.NoError(os.WriteFile(c.tokFile, []byte(c.token+"\n"), 0o600))
	ccJSON := fmt.Appendf(nil, `{"writeTokens": [{"name": "operations", "sha256": %q}]}`, vmconfig.TokenHash(c.token))
	subnetJSON, err := json.Marshal(map[string]any{"snowParameters": localnet.Snow(len(an.Nodes))})
	require.NoError(err)
	for _, nd := range an.Nodes {
		require.NoError(nd.Configure(rec.SubnetID, rec.ChainID, ccJSON, subnetJSON))
	}
	require.NoError(an.Stop(ctx))
	for _, nd := range an.Nodes {
		require.NoError(nd.Start())
	}
	require.NoError(an.WaitHealthy(ctx))

	require.Equal(0, schain(t, ctx, &res, append(args, "--wait-tracking", "2m")...))
	require.True(res.Record.Done())
	require.Equal(rec.ChainID, res.Record.ChainID, "the chain has the ID the first run printed")
	require.Equal(0, schain(t, ctx, &res, args...))
	require.Empty(res.Issued, "a run of a complete deployment changes nothing")
	c.record = res.Record

	var st deploy.Status
	waitFor(t, 2*time.Minute, "every validator serves the chain in agreement (deploy status)", func() error {
		if code := schain(t, ctx, &st, "deploy", "status", "--json", "--record", record); code != 0 {
			return fmt.Errorf("exit %d", code)
		}
		return nil
	})

	rc := client.DefaultRouterConfig()
	rc.Client.Token = c.token
	c.router, err = client.NewRouter(c.uris(), rec.ChainID.String(), rc)
	require.NoError(err)
	waitFor(t, 2*time.Minute, "the chain to open its first membership", func() error {
		_, err := c.router.GetMembership(ctx)
		return err
	})
	return c
}

func (c *chain) uris() []string {
	var out []string
	for _, nd := range c.net.Nodes {
		out = append(out, nd.URI)
	}
	return out
}

// node is a read client of one node.
func (c *chain) node(t *testing.T, nd *avanet.Node) *client.Client {
	t.Helper()
	cc, err := client.New(nd.URI, c.record.ChainID.String(), client.DefaultConfig())
	require.NoError(t, err)
	return cc
}

// agree waits until every node holds the same block at the highest height
// all accepted, and returns it.
func (c *chain) agree(t *testing.T, ctx context.Context, limit time.Duration) (uint64, *api.BlockReply) {
	t.Helper()
	var h uint64
	var blk *api.BlockReply
	waitFor(t, limit, "the nodes to agree", func() error {
		var err error
		h, blk, err = c.commonBlock(t, ctx)
		return err
	})
	return h, blk
}

func (c *chain) commonBlock(t *testing.T, ctx context.Context) (uint64, *api.BlockReply, error) {
	var h uint64
	first := true
	for _, nd := range c.net.Nodes {
		n, err := c.node(t, nd).GetNode(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", nd.Addr, err)
		}
		if first || n.Height < h {
			h, first = n.Height, false
		}
	}
	var blk *api.BlockReply
	for _, nd := range c.net.Nodes {
		b, err := c.node(t, nd).GetBlock(ctx, h)
		if err != nil {
			return 0, nil, fmt.Errorf("%s: block %d: %w", nd.Addr, h, err)
		}
		if blk != nil && b.ID != blk.ID {
			return 0, nil, fmt.Errorf("%s holds block %s at %d, another %s", nd.Addr, b.ID, h, blk.ID)
		}
		blk = b
	}
	return h, blk, nil
}

// shape gives every host of net and the machine the shape s, and host
// slow the shape slowShape.
func shape(t *testing.T, ctx context.Context, net *hosts.Net, s hosts.Shape, slow *hosts.Host, slowShape hosts.Shape) {
	t.Helper()
	for _, h := range net.Hosts() {
		hs := s
		if h == slow {
			hs = slowShape
		}
		require.NoError(t, h.Shape(ctx, hs))
	}
	require.NoError(t, net.ShapeMachine(ctx, s))
}

// schain runs the CLI built by `make build`, decodes its JSON document into
// out, and returns the exit code.
func schain(t *testing.T, ctx context.Context, out any, args ...string) int {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(localnettest.BuildDir(), "schain"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("schain %s:\n%s", strings.Join(args, " "), stderr.String())
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	if stdout.Len() > 0 {
		require.NoError(t, json.Unmarshal(stdout.Bytes(), out), "stdout: %s", stdout.String())
	}
	return code
}

// waitFor polls f every 200 ms until it succeeds, and fails the test with
// its last error after limit.
func waitFor(t *testing.T, limit time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting for "+what, "after %v; last error: %v", limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
