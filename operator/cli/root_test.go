package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// run executes the command line in-process and returns exit code and output.
func run(t *testing.T, args ...string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := Execute(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestAllocateRoutesToOwner(t *testing.T) {
	require := require.New(t)
	f := newFakeChain(t, 2, map[string]int{"photos": 1})
	code, out, errOut := run(t, "--rpc", f.Nodes[0].URI+","+f.Nodes[1].URI, "--chain", f.ChainID.String(),
		"allocate", "--range", "photos", "--count", "5", "--floor", "100", "--wait")
	require.Equal(exitOK, code, errOut)
	require.Contains(out, "owner:        "+f.Nodes[1].ID.String())
	require.Contains(out, "base:         100\n")
	require.Contains(out, "status:       accepted\n")
	require.Contains(out, `entry:        range "photos" ids [100, 105)`)

	// Repeated --rpc works too, and the chain comes from the environment.
	t.Setenv(ChainEnv, f.ChainID.String())
	code, out, errOut = run(t, "--rpc", f.Nodes[0].URI, "--rpc", f.Nodes[1].URI, "allocate", "--range", "photos", "--count", "1")
	require.Equal(exitOK, code, errOut)
	require.Regexp(`(?m)^txID:\s+\S+$`, out)
}

func TestOwnerOutput(t *testing.T) {
	require := require.New(t)
	f := newFakeChain(t, 1, nil)
	code, out, errOut := run(t, "--rpc", f.Nodes[0].URI, "--chain", f.ChainID.String(), "owner", "photos")
	require.Equal(exitOK, code, errOut)
	// Aligned "key: value" lines: every value starts in the same column.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(lines, 4)
	col := -1
	for _, l := range lines {
		m := regexp.MustCompile(`^\w+:\s+`).FindString(l)
		require.NotEmpty(m, l)
		if col == -1 {
			col = len(m)
		}
		require.Len(m, col, l)
	}
	require.Contains(out, "owner:        "+f.Nodes[0].ID.String())

	code, out, errOut = run(t, "--rpc", f.Nodes[0].URI, "--chain", f.ChainID.String(), "--json", "owner", "photos")
	require.Equal(exitOK, code, errOut)
	var reply api.OwnerReply
	require.NoError(json.Unmarshal([]byte(out), &reply))
	require.Equal(api.OwnerReply{Range: "photos", Owner: f.Nodes[0].ID, PChainHeight: f.Height()}, reply)
}

func TestErrorExits(t *testing.T) {
	f := newFakeChain(t, 2, map[string]int{"photos": 1})
	chain := f.ChainID.String()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{
			name: "owner not among the endpoints",
			args: []string{"--rpc", f.Nodes[0].URI, "--chain", chain, "allocate", "--range", "photos", "--count", "1"},
			code: exitNotOwner,
			stderr: `schain: not owner: range "photos" is owned by ` + f.Nodes[1].ID.String() +
				fmt.Sprintf(" at P-chain height %d (the client follows this automatically when several --rpc URIs are given)\n", f.Height()),
		},
		{
			name:   "invalid params",
			args:   []string{"--rpc", f.Nodes[0].URI, "--chain", chain, "allocate", "--range", "bad range", "--count", "1"},
			code:   exitUsage,
			stderr: "schain: invalid params: txs: invalid range: byte 0x20 at 3",
		},
		{name: "missing count", args: []string{"--chain", chain, "allocate", "--range", "x"}, code: exitUsage, stderr: `usage: required flag(s) "count" not set (see schain allocate --help)`},
		{name: "unknown flag", args: []string{"--chain", chain, "owner", "x", "--nope"}, code: exitUsage, stderr: "unknown flag"},
		{name: "no chain", args: []string{"--chain", "", "owner", "x"}, code: exitUsage, stderr: "--chain is required"},
		{name: "bad chunk", args: []string{"--chain", chain, "put-manifest", "--bucket", "b", "--key", "k", "--content-hash", "11111111111111111111111111111111LpoYY", "--chunk", "b:1:2"}, code: exitUsage, stderr: "range:id:size:hash"},
		{name: "unreachable", args: []string{"--rpc", "127.0.0.1:1", "--chain", chain, "--timeout", "300ms", "alloc", "x"}, code: exitUnavailable, stderr: "unreachable: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, tt.args...)
			require.Equal(t, tt.code, code, errOut)
			require.Contains(t, errOut, tt.stderr)
			require.LessOrEqual(t, strings.Count(errOut, "\n"), 1, "one line")
		})
	}

	// --json also puts the error on stdout, with its code name and data.
	code, out, _ := run(t, "--rpc", f.Nodes[0].URI, "--chain", chain, "--json", "allocate", "--range", "photos", "--count", "1")
	require.Equal(t, exitNotOwner, code)
	var got struct {
		Error struct {
			Name string           `json:"name"`
			Code int              `json:"code"`
			Data api.NotOwnerData `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "not_owner", got.Error.Name)
	require.Equal(t, api.CodeNotOwner, got.Error.Code)
	require.Equal(t, f.Nodes[1].ID, got.Error.Data.Owner)
}

func TestParseChunk(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	c, err := parseChunk("bucket/band:x:7:9:" + hash)
	require.NoError(t, err)
	require.Equal(t, "bucket/band:x", c.Range)
	require.Equal(t, uint64(7), c.ID)
	require.Equal(t, uint64(9), c.Size)
	require.Equal(t, byte(0xab), c.Hash[31])
	back, err := parseChunk(chunkString(c))
	require.NoError(t, err)
	require.Equal(t, c, back)
	for _, bad := range []string{"", "r:1:2", ":1:2:" + hash, "r:x:2:" + hash, "r:1:2:zz"} {
		_, err := parseChunk(bad)
		require.ErrorIs(t, err, errChunkSyntax, bad)
	}
}

// newFakeChain starts n fake nodes; each range of owners belongs to that
// node, every other range to node 0.
func newFakeChain(t *testing.T, n int, owners map[string]int) *apitest.Net {
	f := apitest.New(t, n)
	for rng, i := range owners {
		f.SetOwner(rng, i)
	}
	return f
}
