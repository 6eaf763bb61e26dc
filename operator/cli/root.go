package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/vm"
)

// ChainEnv names the environment variable that defaults --chain, so a shell
// session set up for one network need not repeat it.
const ChainEnv = "SCHAIN_CHAIN_ID"

// Globals are the root's persistent flags and the command's output streams.
type Globals struct {
	RPC   []string
	Chain string
	// PChain is the node whose P-chain view weighs fresh reads.
	PChain  string
	JSON    bool
	Timeout time.Duration
	// token and tokenFile give the write token (see resolveToken).
	token     string
	tokenFile string

	Out    io.Writer
	ErrOut io.Writer
	// result is the command's JSON document with --json, written by
	// Execute when the command returns (see emit); streamed says the
	// command wrote JSON lines itself (see stream).
	result   []byte
	streamed bool
	// command is the path of the command that ran ("schain allocate"),
	// for the usage hint.
	command string
}

// Execute runs the command line args and returns the process exit code; it
// is main without os.Exit, so tests run commands in-process.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &Globals{Out: stdout, ErrOut: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if cmd != nil {
		g.command = cmd.CommandPath()
	}
	code := exitOK
	var f *failure
	if err != nil {
		d := describe(err, g)
		f, code = &d, d.ExitCode
		fmt.Fprintln(stderr, "schain: "+d.Line)
	}
	if g.JSON {
		if werr := g.WriteJSON(f); werr != nil {
			fmt.Fprintln(stderr, "schain: writing the JSON output: "+werr.Error())
			return max(code, exitError)
		}
	}
	return code
}

func newRootCmd(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "schain",
		Short: "S-Chain command line: allocate ids, commit manifests, inspect nodes",
		Long: `schain talks to S-Chain nodes over JSON-RPC at <rpc>/ext/bc/<chain>.

Writes go to the range's owner: with several --rpc URIs the client finds the
owner among them and follows NotOwner hints; with one URI the node must own
the range. Reads go to any node that answers.

Writes (allocate, put-manifest, lease acquire|renew|release) need a write token of the nodes: from
--token-file, --token, $SCHAIN_TOKEN, or, for the local network started by
"schain-dev network start", its <network dir>/token (picked up by schain-dev when --chain is
that network's chain). The token is sent as an Authorization header, never
in a URL.

With --json, stdout holds exactly one JSON document: the command's result
(with an "error" member when the command failed after it had one, such as
a wait that ran out), or {"error": {...}} when it failed before; progress
and hints go to stderr. "schain validators watch --json" writes one JSON
object per line, one per pass.

--version prints the VM version and the build's module version.

` + exitCodesHelp(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	// Cobra checks required flags and flag groups after the persistent
	// pre-run; checking them here first makes their errors usage errors.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return UsageError{err}
		}
		if err := cmd.ValidateFlagGroups(); err != nil {
			return UsageError{err}
		}
		return nil
	}
	var version bool
	root.Flags().BoolVar(&version, "version", false, "print the VM version and the build's module version")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if version {
			return g.printVersion()
		}
		return cmd.Help()
	}
	pf := root.PersistentFlags()
	pf.StringSliceVar(&g.RPC, "rpc", []string{"http://127.0.0.1:9650"}, "node URIs (comma-separated or repeated)")
	pf.StringVar(&g.Chain, "chain", os.Getenv(ChainEnv), "chain ID or alias (default from $"+ChainEnv+")")
	pf.StringVar(&g.PChain, "pchain", "", "node you trust whose P-chain API weighs fresh reads (default: the validator set more than 2/3 of --rpc report alike; validators watch: its P-chain node)")
	pf.BoolVar(&g.JSON, "json", false, "machine-readable JSON output")
	pf.DurationVar(&g.Timeout, "timeout", 30*time.Second, "overall deadline of the command, retries and waits included")
	pf.StringVar(&g.tokenFile, "token-file", "", "file holding the write token (default $"+TokenEnv+", or the local network's token)")
	pf.StringVar(&g.token, "token", "", "write token (visible in the process list: prefer --token-file or $"+TokenEnv+")")
	root.MarkFlagsMutuallyExclusive("token", "token-file")
	root.AddCommand(
		newAllocateCmd(g), newPutManifestCmd(g),
		newReceiptCmd(g), newOwnerCmd(g), newMembershipCmd(g), newAllocCmd(g), newManifestCmd(g), newManifestsCmd(g), newNodeCmd(g),
		newTokenCmd(g), newShadowCmd(g),
		newValidatorsCmd(g), newSeaweedFSCmd(g), newVerifyCmd(g), newDeployCmd(g), newLeaseCmd(g),
	)
	if dev.Name != "" {
		root.Use = dev.Name
	}
	for _, c := range dev.Commands {
		root.AddCommand(c(g))
	}
	RequireSubcommand(root)
	return root
}

// RequireSubcommand walks the command tree: a command that only groups
// others (and the root) prints its help when called alone and refuses an
// unknown subcommand with the usage exit code. Cobra would print the help
// and exit 0 for "schain-dev network nope", and exit 1 for "schain nope".
func RequireSubcommand(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		RequireSubcommand(sub)
	}
	if !cmd.HasSubCommands() {
		return
	}
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
		}
		return UsageError{errors.New(msg)}
	}
	if cmd.RunE == nil && cmd.Run == nil {
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}

// Router builds the client for the API commands from the global flags,
// then opts.
func (g *Globals) Router(opts ...func(*client.RouterConfig)) (*client.Router, error) {
	if g.Chain == "" {
		return nil, UsageError{fmt.Errorf("--chain is required (or set %s)", ChainEnv)}
	}
	if g.Timeout <= 0 {
		return nil, UsageError{fmt.Errorf("--timeout must be positive, got %v", g.Timeout)}
	}
	uris := make([]string, 0, len(g.RPC))
	for _, u := range g.RPC {
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
	cfg.Client.Timeout = min(cfg.Client.Timeout, g.Timeout)
	cfg.Client.WaitTimeout = g.Timeout
	cfg.Client.Token = token
	if g.PChain != "" {
		pchain := g.PChain
		if !strings.Contains(pchain, "://") {
			pchain = "http://" + pchain
		}
		cfg.Stake = client.PChainStake(pchain, g.Chain, nil)
	}
	for _, o := range opts {
		o(&cfg)
	}
	r, err := client.NewRouter(uris, g.Chain, cfg)
	if err != nil {
		return nil, UsageError{err}
	}
	return r, nil
}

// WithRouter runs f with the router of the global flags and a context
// bounded by --timeout: the common frame of the API commands.
func (g *Globals) WithRouter(cmd *cobra.Command, f func(context.Context, *client.Router) error) error {
	r, err := g.Router()
	if err != nil {
		return err
	}
	ctx, cancel := g.APIContext(cmd)
	defer cancel()
	return f(ctx, r)
}

// APIContext bounds one API command by --timeout.
func (g *Globals) APIContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), g.Timeout)
}

// MustMarkRequired marks cmd's flags required: cobra refuses the command
// line without them (exit 2, see PersistentPreRunE). A name that is not a
// flag of cmd is a bug caught by every test that builds the command tree.
func MustMarkRequired(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		if err := cmd.MarkFlagRequired(n); err != nil {
			panic(fmt.Sprintf("schain: %s: %v", cmd.CommandPath(), err))
		}
	}
}

// ExactArgs is cobra.ExactArgs whose failure exits with the usage code.
func ExactArgs(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return UsageError{fmt.Errorf("want %s, got %d argument(s)", names, len(args))}
		}
		return nil
	}
}

// versionInfo is what --version prints.
type versionInfo struct {
	// VM is the version the plugin reports to its node (vm.Version).
	VM string `json:"vm"`
	// Module and ModuleVersion are this build's main module (a pseudo-
	// version from the VCS for a build in a checkout, "(devel)" without).
	Module        string `json:"module"`
	ModuleVersion string `json:"moduleVersion"`
	Revision      string `json:"revision,omitempty"`
	Modified      bool   `json:"modified,omitempty"`
	Go            string `json:"go"`
}

func buildVersion() versionInfo {
	v := versionInfo{VM: vm.Version, Module: "github.com/s-chain/schain", ModuleVersion: "unknown", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.ModuleVersion = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (g *Globals) printVersion() error {
	v := buildVersion()
	fs := []Field{{"vm", v.VM}, {"module", v.Module + " " + v.ModuleVersion}}
	if v.Revision != "" {
		rev := v.Revision
		if v.Modified {
			rev += " (modified)"
		}
		fs = append(fs, Field{"revision", rev})
	}
	return g.Emit(v, append(fs, Field{"go", v.Go}))
}

// BuildDirEnv overrides where binaries and network data live.
const BuildDirEnv = "SCHAIN_BUILD_DIR"

// DefaultBuildDir is where the binaries and the local network live:
// $SCHAIN_BUILD_DIR, or build.
func DefaultBuildDir() string {
	if d := os.Getenv(BuildDirEnv); d != "" {
		return d
	}
	return "build"
}
