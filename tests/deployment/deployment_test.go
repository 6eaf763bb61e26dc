//go:build e2e

// Package deployment runs `schain deploy` as an operator would, onto a
// running avalanchego network that no schain command started: a plain
// tmpnet network (primary network only, the plugin installed).
package deployment

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/chains"
	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/deploy"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
	vmconfig "github.com/s-chain/schain/vm/config"
)

// TestDeployOntoRunningNetwork: the first `schain deploy` creates the subnet
// and adds both validators, then stops (exit 6) with the --track-subnets
// and chain config lines; once the nodes are restarted with them, the
// second run creates the chain and waits until both run it; a third run
// issues nothing; `schain deploy status` sees both serving in agreement,
// and the chain allocates with the token of the chain config.
func TestDeployOntoRunningNetwork(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	build := localnettest.BuildDir()
	root := filepath.Join(build, "e2e-deploy")
	require.NoError(os.RemoveAll(root))
	require.NoError(os.MkdirAll(root, 0o755))

	tn := &tmpnet.Network{
		Owner: "schain-deploy-e2e",
		DefaultRuntimeConfig: tmpnet.NodeRuntimeConfig{Process: &tmpnet.ProcessRuntimeConfig{
			AvalancheGoPath: filepath.Join(build, "avalanchego"), PluginDir: filepath.Join(build, "plugins"), ReuseDynamicPorts: true,
		}},
		DefaultFlags: tmpnet.FlagsMap{config.LogLevelKey: "info", config.FdLimitKey: "8192"},
		Nodes:        tmpnet.NewNodesOrPanic(2),
	}
	log := logging.NewLogger("", logging.NewWrappedCore(logging.Info, os.Stderr, logging.Plain.ConsoleEncoder()))
	require.NoError(tmpnet.BootstrapNewNetwork(ctx, log, tn, root))
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer scancel()
		if err := tn.Stop(sctx); err != nil {
			t.Logf("stopping the network: %v", err)
		}
	})

	keyFile := filepath.Join(root, "owner.key")
	require.NoError(subnet.WriteKey(keyFile, tn.PreFundedKeys[0]))
	record := filepath.Join(root, "deploy.json")
	chainConfigs := filepath.Join(root, "chain-configs")
	args := []string{"deploy", "--json", "--key-file", keyFile, "--record", record, "--chain-config-dir", chainConfigs}
	for _, nd := range tn.Nodes {
		args = append(args, "--node", nd.URI)
	}

	// A dry run shows the plan and issues nothing.
	var res deploy.Result
	code := schain(t, ctx, &res, append(args, "--dry-run")...)
	require.Equal(0, code)
	require.True(res.DryRun)
	require.Len(res.Record.Steps, 4)
	require.Positive(res.Record.FeeNAVAX())
	_, err := os.Stat(record)
	require.ErrorIs(err, os.ErrNotExist)

	code = schain(t, ctx, &res, args...)
	require.Equal(6, code, "waits for the nodes to track the subnet")
	rec := res.Record
	require.Len(res.Pending, 2)
	require.Contains(res.Pending[0], "--track-subnets="+rec.SubnetID.String())

	// The operator's part: the chain config with a write token, the flag,
	// a restart. (tmpnet gives every node --chain-configs-content, which
	// hides --chain-config-dir: the file goes there too, as an operator's
	// would, and its content into the flag.)
	token, err := vmconfig.GenerateToken()
	require.NoError(err)
	wt, err := vmconfig.NewWriteToken("operator", token, nil, nil)
	require.NoError(err)
	cc := vmconfig.DefaultChainConfig()
	cc.WriteTokens = []vmconfig.WriteToken{wt}
	b, err := json.Marshal(cc)
	require.NoError(err)
	require.NoError(os.MkdirAll(filepath.Join(chainConfigs, rec.ChainID.String()), 0o755))
	require.NoError(os.WriteFile(filepath.Join(chainConfigs, rec.ChainID.String(), "config.json"), b, 0o644))
	content, err := json.Marshal(map[string]chains.ChainConfig{rec.ChainID.String(): {Config: b}})
	require.NoError(err)
	for _, nd := range tn.Nodes {
		nd.Flags[config.TrackSubnetsKey] = rec.SubnetID.String()
		nd.Flags[config.ChainConfigContentKey] = base64.StdEncoding.EncodeToString(content)
		require.NoError(nd.Restart(ctx))
	}
	for _, nd := range tn.Nodes {
		require.NoError(nd.WaitForHealthy(ctx))
	}

	code = schain(t, ctx, &res, append(args, "--wait-tracking", "2m")...)
	require.Equal(0, code)
	require.True(res.Record.Done())
	require.Equal(rec.ChainID, res.Record.ChainID, "the chain has the ID the first run printed")
	require.Equal([]string{rec.ChainID.String()}, idStrings(res))

	code = schain(t, ctx, &res, args...)
	require.Equal(0, code)
	require.Empty(res.Issued, "a second complete run changes nothing")

	var st deploy.Status
	require.Eventually(func() bool {
		return schain(t, ctx, &st, "deploy", "status", "--json", "--record", record) == 0
	}, 2*time.Minute, time.Second, "every validator serves the chain in agreement")
	require.Len(st.Nodes, 2)

	ccfg := client.DefaultConfig()
	ccfg.Token = token
	var uris []string
	for _, nd := range tn.Nodes {
		uris = append(uris, nd.URI)
	}
	rcfg := client.DefaultRouterConfig()
	rcfg.Client = ccfg
	r, err := client.NewRouter(uris, rec.ChainID.String(), rcfg)
	require.NoError(err)
	var c *client.Committed
	require.Eventually(func() bool {
		c, err = r.AllocateCommitted(ctx, api.AllocateArgs{Range: "deployed", Count: 3})
		if err != nil {
			t.Logf("allocate: %v", err)
		}
		return err == nil
	}, 3*time.Minute, time.Second, "the deployed chain allocates")
	require.Equal(api.StatusAccepted, c.Receipt.Status)
}

func idStrings(res deploy.Result) []string {
	var out []string
	for _, id := range res.Issued {
		out = append(out, id.String())
	}
	return out
}

// schain runs the CLI built by `make build`, decodes its JSON document into
// out, and returns the exit code.
func schain(t *testing.T, ctx context.Context, out any, args ...string) int {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(localnettest.BuildDir(), "schain"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("schain %v:\n%s", args, stderr.String())
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
