package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tests/framework/apitest"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/benchmark/benchmarktest"
	vmconfig "github.com/s-chain/schain/vm/config"
)

// TestBenchJSON: the bench's result is one document holding report.json's
// content, its tables stay off stdout.
func TestBenchJSON(t *testing.T) {
	require := require.New(t)
	out := t.TempDir()
	start := func(context.Context, benchOptions, io.Writer) ([]benchmark.Target, func(), error) {
		return []benchmark.Target{{Name: "schain", SChain: true, Cluster: benchmarktest.New(3, time.Millisecond, false)}}, func() {}, nil
	}
	var stdout, stderr bytes.Buffer
	g := &cli.Globals{Out: &stdout, ErrOut: &stderr, JSON: true}
	cmd := benchCmd(g, benchSystems{start: start})
	cmd.SetArgs([]string{"--out", out, "--ranges", "4", "--clients", "2", "--rounds", "1", "--round-duration", "50ms", "--failover=false"})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(cmd.ExecuteContext(ctx), stderr.String())
	require.Empty(stdout.String(), "nothing before the document")
	require.NoError(g.WriteJSON(nil))
	var res struct {
		Report  benchmark.Report `json:"report"`
		Outputs []string         `json:"outputs"`
	}
	require.NoError(json.Unmarshal(requireOneDocument(t, stdout.String()), &res))
	require.Len(res.Report.Systems, 1)
	require.Contains(res.Outputs, filepath.Join(out, benchReportFile))
}

func TestBenchGenesisSetsTheGroupBound(t *testing.T) {
	b, err := benchGenesis(80)
	require.NoError(t, err)
	g, err := vmconfig.ParseGenesis(b)
	require.NoError(t, err)
	require.Equal(t, uint64(80), g.GroupCommitReturnMs)
	require.Equal(t, vmconfig.DefaultGenesis().GroupCommitWindowMs, g.GroupCommitWindowMs, "the rest of the genesis is the local network's")

	_, err = benchGenesis(5_000)
	require.ErrorAs(t, err, new(cli.UsageError), "a bound the genesis refuses is the caller's mistake")
}

// TestStoresBenchRefusesBadNetworks: a network size or a genesis no node
// would take is refused before anything starts.
func TestStoresBenchRefusesBadNetworks(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"--validators", "-1"},
		{"--validators", "17"},
		{"--group-return-ms", "5000"},
	} {
		code, _, errOut := run(t, append([]string{"seaweedfs", "bench-stores", "--out", out}, args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was started")
}

// TestJSONOutputIsOneDocument: the development commands, and the operator
// commands' local defaults, print exactly one JSON document with --json.
func TestJSONOutputIsOneDocument(t *testing.T) {
	f := apitest.New(t, 2)
	chain := f.ChainID.String()
	empty := t.TempDir()
	hasError := func(name string) func(*testing.T, map[string]any) {
		return func(t *testing.T, doc map[string]any) {
			e, ok := doc["error"].(map[string]any)
			require.True(t, ok, "no error member: %v", doc)
			require.Equal(t, name, e["name"])
		}
	}
	hasKeys := func(keys ...string) func(*testing.T, map[string]any) {
		return func(t *testing.T, doc map[string]any) {
			for _, k := range keys {
				require.Contains(t, doc, k)
			}
			require.NotContains(t, doc, "error")
		}
	}
	tests := []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, doc map[string]any)
	}{
		{"network status without a network", []string{"network", "status", "--build-dir", empty}, exitError, hasError("error")},
		{"network stop without a network", []string{"network", "stop", "--build-dir", empty}, exitOK, hasKeys("stopped")},
		{"demo without a network", []string{"demo", "--build-dir", empty}, exitError, hasError("error")},
		{"shadow run", []string{"--rpc", f.Nodes[0].URI, "--chain", chain, "shadow", "run", "--requests", "40", "--ranges", "2",
			"--concurrency", "2", "--gate-requests", "10", "--gate-duration", "0s", "--out", t.TempDir()}, exitOK, hasKeys("report", "floors", "outputs")},
		{"shadow run, gate closed", []string{"--rpc", f.Nodes[0].URI, "--chain", chain, "shadow", "run", "--requests", "10", "--ranges", "2",
			"--concurrency", "2", "--gate-requests", "1000", "--out", t.TempDir()}, exitNotReady, hasError("not_ready_for_cutover")},
		{"seaweedfs status without a cluster", []string{"seaweedfs", "status", "--dir", empty}, exitError, hasError("error")},
		{"seaweedfs down without a cluster", []string{"seaweedfs", "down", "--dir", empty}, exitOK, hasKeys("stopped", "dir")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"--json"}, tt.args...)...)
			require.Equal(t, tt.code, code, errOut)
			doc := requireOneDocument(t, out)
			if tt.check != nil {
				var m map[string]any
				require.NoError(t, json.Unmarshal(doc, &m))
				tt.check(t, m)
			}
		})
	}
}

// TestShadowRunWritesPlots: schain-dev's shadow run compares against the
// embedded stand-in and writes the plots.
func TestShadowRunWritesPlots(t *testing.T) {
	f := apitest.New(t, 1)
	out := t.TempDir()
	code, _, errOut := run(t, "--rpc", f.Nodes[0].URI, "--chain", f.ChainID.String(), "shadow", "run", "--requests", "40", "--ranges", "2",
		"--concurrency", "2", "--gate-requests", "10", "--gate-duration", "0s", "--out", out)
	require.Equal(t, exitOK, code, errOut)
	for _, f := range []string{"report.json", "summary.txt", "latency-cdf.png", "agreement-window.png"} {
		require.FileExists(t, filepath.Join(out, f))
	}
}
