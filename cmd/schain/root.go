package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
)

// chainEnv names the environment variable that defaults --chain, so a shell
// session set up for one network need not repeat it.
const chainEnv = "SCHAIN_CHAIN_ID"

// globals are the root's persistent flags and the command's output streams.
type globals struct {
	rpc     []string
	chain   string
	json    bool
	timeout time.Duration
	// token and tokenFile give the write token (see resolveToken).
	token     string
	tokenFile string

	out    io.Writer
	errOut io.Writer
}

// execute runs the command line args and returns the process exit code; it
// is main without os.Exit, so tests run commands in-process.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{out: stdout, errOut: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	f := describe(err, g)
	fmt.Fprintln(stderr, "schain: "+f.Line)
	if g.json {
		_ = json.NewEncoder(stdout).Encode(map[string]failure{"error": f})
	}
	return f.ExitCode
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "schain",
		Short: "S-Chain command line: allocate ids, commit manifests, inspect nodes",
		Long: `schain talks to S-Chain nodes over JSON-RPC at <rpc>/ext/bc/<chain>.

Writes go to the range's owner: with several --rpc URIs the client finds the
owner among them and follows NotOwner hints; with one URI the node must own
the range. Reads go to any node that answers.

Writes (allocate, put-manifest) need a write token of the nodes: from
--token-file, --token, $SCHAIN_TOKEN, or, for the local network started by
"schain network start", its <network dir>/token (picked up when --chain is
that network's chain). The token is sent as an Authorization header, never
in a URL.

Exit codes: 0 ok, 1 error, 2 usage or invalid parameters, 3 rejected by the
chain, 4 not owner / owner unreachable, 5 unavailable (not ready, mempool
full, too many requests, unreachable, timed out), 7 unauthorized (no, wrong
or revoked write token), 8 refused by a validators command's precondition
(nothing issued), 9 a finality certificate or its proof does not check out
(schain verify).`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringSliceVar(&g.rpc, "rpc", []string{"http://127.0.0.1:9650"}, "node URIs (comma-separated or repeated)")
	pf.StringVar(&g.chain, "chain", os.Getenv(chainEnv), "chain ID or alias (default from $"+chainEnv+")")
	pf.BoolVar(&g.json, "json", false, "machine-readable JSON output")
	pf.DurationVar(&g.timeout, "timeout", 30*time.Second, "overall deadline of the command, retries and waits included")
	pf.StringVar(&g.tokenFile, "token-file", "", "file holding the write token (default $"+tokenEnv+", or the local network's token)")
	pf.StringVar(&g.token, "token", "", "write token (visible in the process list: prefer --token-file or $"+tokenEnv+")")
	root.AddCommand(
		newAllocateCmd(g), newPutManifestCmd(g),
		newReceiptCmd(g), newOwnerCmd(g), newMembershipCmd(g), newAllocCmd(g), newManifestCmd(g), newNodeCmd(g),
		newLegacyCmd(g), newNetworkCmd(g), newDemoCmd(g), newTokenCmd(g), newShadowCmd(g), newBenchCmd(g),
		newValidatorsCmd(g), newSeaweedFSCmd(g), newVerifyCmd(g),
	)
	return root
}

// router builds the client for the API commands from the global flags.
func (g *globals) router() (*client.Router, error) {
	if g.chain == "" {
		return nil, usageError{fmt.Errorf("--chain is required (or set %s)", chainEnv)}
	}
	if g.timeout <= 0 {
		return nil, usageError{fmt.Errorf("--timeout must be positive, got %v", g.timeout)}
	}
	uris := make([]string, 0, len(g.rpc))
	for _, u := range g.rpc {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		uris = append(uris, u)
	}
	token, err := g.resolveToken()
	if err != nil {
		return nil, err
	}
	cfg := client.DefaultRouterConfig()
	cfg.Client.Timeout = min(cfg.Client.Timeout, g.timeout)
	cfg.Client.WaitTimeout = g.timeout
	cfg.Client.Token = token
	r, err := client.NewRouter(uris, g.chain, cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return r, nil
}

// withRouter runs f with the router of the global flags and a context
// bounded by --timeout: the common frame of the API commands.
func (g *globals) withRouter(cmd *cobra.Command, f func(context.Context, *client.Router) error) error {
	r, err := g.router()
	if err != nil {
		return err
	}
	ctx, cancel := g.apiContext(cmd)
	defer cancel()
	return f(ctx, r)
}

// apiContext bounds one API command by --timeout.
func (g *globals) apiContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), g.timeout)
}

// exactArgs is cobra.ExactArgs whose failure exits with the usage code.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("want %s, got %d argument(s)", names, len(args))}
		}
		return nil
	}
}
