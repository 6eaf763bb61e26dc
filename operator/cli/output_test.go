package cli

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/apitest"
	"github.com/s-chain/schain/vm"
)

// requireOneDocument fails unless out is exactly one JSON object or list
// (surrounding white space aside) and returns it.
func requireOneDocument(t *testing.T, out string) json.RawMessage {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var doc json.RawMessage
	require.NoError(t, dec.Decode(&doc), "stdout is not JSON: %q", out)
	var extra json.RawMessage
	require.ErrorIs(t, dec.Decode(&extra), io.EOF, "stdout holds more than one JSON document: %q", out)
	require.Contains(t, "{[", string(doc[:1]), "not an object or a list: %s", doc)
	return doc
}

// jsonCase is one command line of TestJSONOutputIsOneDocument.
type jsonCase struct {
	name string
	args []string
	code int
	// check, if set, looks into the document.
	check func(t *testing.T, doc map[string]any)
}

// TestJSONOutputIsOneDocument runs every command that prints a result
// with --json, against the fake S-Chain network or on paths that need no
// local network, and requires stdout to be exactly one JSON document,
// whatever the command printed for a human and however it ended.
func TestJSONOutputIsOneDocument(t *testing.T) {
	f := newFakeChain(t, 2, map[string]int{"photos": 1})
	chain := f.ChainID.String()
	api2 := []string{"--rpc", f.Nodes[0].URI + "," + f.Nodes[1].URI, "--chain", chain}
	with := func(args ...string) []string { return append(append([]string{}, api2...), args...) }

	// A receipt that stays pending for two polls, and a manifest's chunk.
	pendingTx := ids.GenerateTestID()
	f.AddReceipt(api.ReceiptReply{TxID: api.ID(pendingTx), Status: api.StatusAccepted, Height: 3,
		Entries: []api.ReceiptEntry{{Range: "photos", Base: 0, Count: 2}}}, 2)
	code, _, errOut := run(t, with("allocate", "--range", "photos", "--count", "8")...)
	require.Equal(t, exitOK, code, errOut)

	dead := apitest.New(t, 1)
	dead.Nodes[0].Close()
	empty := t.TempDir()
	hash := strings.Repeat("ab", 32)
	pairs := filepath.Join(t.TempDir(), "m1")
	writeShadowPairs(t, pairs, 60)
	report := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(report, "seaweedfs.json"), []byte(`{"legacy_max_key":5000,"legacy_max_volume_id":9}`), 0o644))
	vf, vn := newFakeNetwork(t)
	t.Setenv(keyFileEnv, "")

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
	tests := []jsonCase{
		{"allocate --wait", with("allocate", "--range", "photos", "--count", "5", "--wait"), exitOK, hasKeys("txID", "receipt")},
		{"allocate --pooled", with("allocate", "--range", "photos", "--count", "4", "--pooled"), exitOK, hasKeys("txID")},
		{"put-manifest --wait", with("put-manifest", "--bucket", "photos", "--key", "k", "--size", "3", "--content-hash", hash,
			"--chunk", "photos:1:3:"+hash, "--wait"), exitOK, hasKeys("txID", "receipt")},
		{"receipt --wait", with("receipt", pendingTx.String(), "--wait"), exitOK, hasKeys("status", "entries")},
		{"verify, not final", with("verify", pendingTx.String()), exitUnavailable, hasError("not_final")},
		{"verify, a txID and --height", with("verify", pendingTx.String(), "--height", "3"), exitUsage, hasError("usage")},
		{"owner", with("owner", "photos"), exitOK, hasKeys("owner", "pChainHeight")},
		{"membership", with("membership"), exitOK, hasKeys("members")},
		{"alloc", with("alloc", "photos"), exitOK, hasKeys("next")},
		{"manifest", with("manifest", "photos", "k"), exitOK, hasKeys("manifest")},
		{"node", with("node"), exitOK, nil},
		{"node, one down", []string{"--rpc", f.Nodes[0].URI + "," + dead.Nodes[0].URI, "--chain", chain, "--timeout", "2s", "node"}, exitUnavailable, nil},
		{"token new", []string{"token", "new", "--name", "ci", "--ranges", "ci/*"}, exitOK, hasKeys("token", "sha256", "config")},
		{"--version", []string{"--version"}, exitOK, hasKeys("vm", "module", "moduleVersion", "go")},
		{"validators status", []string{"--rpc", vf.uri, "--chain", vf.chainID.String(), "validators", "status"}, exitOK, hasKeys("subnetID", "pChain", "membership", "validators")},
		{"validators watch --once", []string{"--rpc", vf.uri, "--chain", vf.chainID.String(), "validators", "watch", "--once", "--remove-after", "10",
			"--key-file", keyFile(t, vf.owner)}, exitOK, hasKeys("time", "outcome")},
		{"validators remove, refused", []string{"--rpc", vf.uri, "--chain", vf.chainID.String(), "validators", "remove", vn["live"].String(),
			"--key-file", keyFile(t, vf.owner), "--dry-run"}, exitRefused, hasError("live_member")},
		{"seaweedfs shadow", []string{"seaweedfs", "shadow", "--prefix", "sw", "--pairs", pairs, "--out", t.TempDir(),
			"--gate-requests", "10", "--gate-duration", "0s"}, exitOK, hasKeys("report", "mirror", "legacy_max_key", "outputs")},
		{"seaweedfs cutover --dry-run", []string{"seaweedfs", "cutover", "--prefix", "own", "--report", report, "--dry-run"}, exitOK, hasKeys("floors", "bounds", "dryRun")},
		{"seaweedfs rollback", with("seaweedfs", "rollback", "--prefix", "own"), exitOK, hasKeys("floors", "bounds", "masterToml")},
		{"shadow run, the stand-in is schain-dev's", []string{"--rpc", f.Nodes[0].URI, "--chain", chain, "shadow", "run", "--requests", "10",
			"--out", t.TempDir()}, exitUsage, hasError("usage")},
		{"seaweedfs cutover, the local cluster is schain-dev's", []string{"seaweedfs", "cutover", "--dir", empty}, exitUsage, hasError("usage")},
		{"a usage error", []string{"allocate", "--range", "photos"}, exitUsage, hasError("usage")},
		{"an unknown command", []string{"nope"}, exitUsage, hasError("usage")},
		{"an API error", []string{"--rpc", f.Nodes[0].URI, "--chain", chain, "allocate", "--range", "photos", "--count", "1"}, exitNotOwner, hasError("not_owner")},
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

// TestJSONFailureAfterResult: a command that had its result and then
// failed (the wait for a submitted transaction) still prints one document:
// the result, with the failure as its "error" member, so that a script
// learns the txID it must poll.
func TestJSONFailureAfterResult(t *testing.T) {
	require := require.New(t)
	f := newFakeChain(t, 1, nil)
	f.Nodes[0].FailNext("getReceipt", apitest.RPCError(api.CodeUnknown, "disk on fire", nil))
	code, out, errOut := run(t, "--json", "--rpc", f.Nodes[0].URI, "--chain", f.ChainID.String(), "allocate", "--range", "photos", "--count", "1", "--wait")
	require.Equal(exitError, code)
	require.Contains(errOut, "disk on fire")
	var doc struct {
		TxID  ids.ID   `json:"txID"`
		Error *failure `json:"error"`
	}
	require.NoError(json.Unmarshal(requireOneDocument(t, out), &doc))
	require.NotEqual(ids.Empty, doc.TxID)
	require.NotNil(doc.Error)
	require.Equal(exitError, doc.Error.ExitCode)
	require.Contains(doc.Error.Message, "disk on fire")
}

// TestUsageErrorsExit2: mistakes in the command line exit 2 with one line
// naming the command's help, whether cobra or a command found them.
func TestUsageErrorsExit2(t *testing.T) {
	tests := []struct {
		name string
		args []string
		line string
	}{
		{"unknown command", []string{"xyzzy"}, `usage: unknown command "xyzzy" for "schain" (see schain --help)`},
		{"unknown command, a suggestion", []string{"valdators"}, `(did you mean validators?)`},
		{"unknown subcommand", []string{"validators", "nope"}, `usage: unknown command "nope" for "schain validators" (see schain validators --help)`},
		{"unknown flag", []string{"owner", "x", "--nope"}, "unknown flag: --nope"},
		{"a missing argument", []string{"--chain", "c", "owner"}, "want RANGE, got 0 argument(s) (see schain owner --help)"},
		{"required flags", []string{"--chain", "c", "allocate"}, `required flag(s) "count", "range" not set (see schain allocate --help)`},
		{"--pooled with --wait", []string{"--chain", "c", "allocate", "--range", "r", "--count", "1", "--pooled", "--wait"}, "[pooled wait] were all set"},
		{"--pooled with --floor", []string{"--chain", "c", "allocate", "--range", "r", "--count", "1", "--pooled", "--floor", "9"}, "[floor pooled] were all set"},
		{"a zero count", []string{"--chain", "c", "allocate", "--range", "r", "--count", "0"}, "--count must be positive"},
		{"a manifest without its hash", []string{"--chain", "c", "put-manifest", "--bucket", "b", "--key", "k"}, "[content-hash deleted] is required"},
		{"two token sources", []string{"--chain", "c", "--token", "a", "--token-file", "f", "alloc", "r"}, "[token token-file] were all set"},
		{"watch without its policy", []string{"validators", "watch"}, `required flag(s) "remove-after" not set`},
		{"token new without a name", []string{"token", "new", "--ranges", "*"}, `required flag(s) "name" not set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			require.Equal(t, exitUsage, code, errOut)
			require.Empty(t, out)
			require.Contains(t, errOut, tt.line)
			require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		})
	}

	// A command that only groups others prints its help and succeeds.
	code, out, _ := run(t, "validators")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "Available Commands:")
}

// TestExitCodesDocumented: every exit code the CLI defines is listed, with
// the same meaning, in the root command's help and in docs/operating/operations.md.
func TestExitCodesDocumented(t *testing.T) {
	require := require.New(t)
	defined := exitConstants(t)
	documented := map[int]bool{}
	for _, c := range exitCodes {
		documented[c.code] = true
	}
	for name, code := range defined {
		require.True(documented[code], "%s (%d) is not in exitCodes", name, code)
	}
	require.Len(exitCodes, len(defined), "exitCodes lists a code no constant defines")

	_, help, _ := run(t, "--help")
	ops, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating", "operations.md"))
	require.NoError(err)
	for _, c := range exitCodes {
		require.Contains(help, "  "+strconv.Itoa(c.code)+"  "+c.meaning, "root help")
		row := regexp.MustCompile(`(?m)^\| ` + strconv.Itoa(c.code) + ` \| .+ \|$`)
		require.Regexp(row, string(ops), "docs/operating/operations.md lists exit code %d", c.code)
	}
}

// exitConstants parses the package for its exit* constants.
func exitConstants(t *testing.T) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	out := map[string]int{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "exit") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok, "%s is not a literal", name.Name)
					v, err := strconv.Atoi(lit.Value)
					require.NoError(t, err)
					out[name.Name] = v
				}
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

func TestVersion(t *testing.T) {
	code, out, errOut := run(t, "--version")
	require.Equal(t, exitOK, code, errOut)
	require.Regexp(t, `(?m)^vm:\s+`+regexp.QuoteMeta(vm.Version)+`$`, out)
	require.Regexp(t, `(?m)^module:\s+github.com/s-chain/schain \S+$`, out)
}

// writeShadowPairs writes n agreeing pairs of one schain-shadow master to
// dir, and its closing state line.
func writeShadowPairs(t *testing.T, dir string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	t0 := time.Unix(1000, 0)
	for i := range n {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		rng := schainseq.KeyRange("sw", uint32(1+i%3), 1)
		require.NoError(t, enc.Encode(schainseq.Pair{
			Seq: uint64(i + 1), Issued: at, At: at, Master: "m1:9333", Term: 1, Kind: schainseq.KindKey, Range: rng, Volume: uint32(1 + i%3),
			Legacy: &schainseq.LegacyAnswer{First: uint64(i + 1), Count: 1},
			SChain: &schainseq.Reservation{Range: rng, Base: uint64(100 + i), Count: 1, TxID: "t", Owner: "o"},
		}))
	}
	require.NoError(t, enc.Encode(schainseq.Pair{At: t0.Add(time.Hour), Master: "m1:9333", Term: 1, Kind: schainseq.KindState,
		State: &schainseq.ShadowState{Offered: uint64(n), Mirrored: uint64(n), LegacyMaxKey: uint64(n)}}))
	require.NoError(t, os.WriteFile(filepath.Join(dir, schainseq.PairsFile), b.Bytes(), 0o644))
}
