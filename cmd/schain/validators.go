package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/eviction"
	"github.com/s-chain/schain/subnet"
	"github.com/s-chain/schain/tests/localnet"
	"github.com/s-chain/schain/vm/api"
)

// keyFileEnv names the environment variable holding the path of the subnet
// owner's key file.
const keyFileEnv = "SCHAIN_SUBNET_KEY_FILE"

// exitRefused: a validators command refused before issuing anything (a
// precondition failed: see the line).
const exitRefused = 8

// errLiveMember: the validator to remove still heartbeats.
var errLiveMember = errors.New("the validator is a member of S-Chain's current epoch (it heartbeats)")

// validatorsFlags are the flags the validators commands share.
type validatorsFlags struct {
	subnet  string
	keyFile string
}

func newValidatorsCmd(g *globals) *cobra.Command {
	vf := &validatorsFlags{}
	cmd := &cobra.Command{
		Use:   "validators",
		Short: "Show the subnet's validators and their liveness; remove or add one on the P-chain",
		Long: `Show the subnet's validators and their liveness; remove or add one on the
P-chain with the subnet owner's key.

A dead validator loses its ranges by itself after K+1 liveness epochs, but
every range keeps seeing 5, 10 or 15 s block gaps at the heights whose
proposer it was drawn to be, until it is removed from the subnet on the
P-chain ("schain validators remove"). "schain validators watch" does it by
policy. The P-chain API of the first --rpc node that answers is used.

The subnet owner's key comes from --key-file, $` + keyFileEnv + `, or, for the
local network started by "schain network start", its
<network dir>/` + localnet.OwnerKeyFile + `. The file holds PrivateKey-<cb58> or 64
hex digits; keep it mode 0600.

Exit codes as for every schain command, and 8 when a precondition failed
and nothing was issued (not the subnet's owner, not a validator, the last
validator, a live member without --force, not enough AVAX for the fee...).`,
	}
	cmd.PersistentFlags().StringVar(&vf.subnet, "subnet", "", "subnet ID (default: the subnet that validates --chain, asked from the P-chain)")
	cmd.AddCommand(newValidatorsStatusCmd(g, vf), newValidatorsRemoveCmd(g, vf), newValidatorsAddCmd(g, vf), newValidatorsWatchCmd(g, vf))
	return cmd
}

// session is what every validators command works with.
type session struct {
	router   *client.Router
	uri      string // the node whose P-chain API is used
	node     subnet.Node
	subnetID ids.ID
}

func (vf *validatorsFlags) open(ctx context.Context, g *globals) (*session, error) {
	r, err := g.router()
	if err != nil {
		return nil, err
	}
	s := &session{router: r}
	var lastErr error
	for _, c := range r.Clients() {
		node := subnet.NewNode(c.URI())
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := node.GetHeight(pctx)
		cancel()
		if err == nil {
			s.uri, s.node = c.URI(), node
			break
		}
		lastErr = fmt.Errorf("%s: %w", c.URI(), err)
	}
	if s.node == nil {
		return nil, fmt.Errorf("%w: no --rpc node answers platform.getHeight (last: %w)", subnet.ErrPChainAPI, lastErr)
	}
	if vf.subnet != "" {
		if s.subnetID, err = ids.FromString(vf.subnet); err != nil {
			return nil, usageError{fmt.Errorf("--subnet %q: %w", vf.subnet, err)}
		}
		return s, nil
	}
	chainID, err := ids.FromString(g.chain)
	if err != nil {
		// An alias: the node knows the chain's ID.
		n, err := r.GetNode(ctx)
		if err != nil {
			return nil, err
		}
		chainID = n.ChainID
	}
	if s.subnetID, err = subnet.SubnetOf(ctx, s.node, chainID); err != nil {
		return nil, err
	}
	return s, nil
}

// admin resolves the owner's key and returns the admin that signs with it.
func (vf *validatorsFlags) admin(g *globals, s *session) (*subnet.Admin, error) {
	path := vf.keyFile
	if path == "" {
		path = os.Getenv(keyFileEnv)
	}
	if path == "" {
		if path = localOwnerKey(g.chain); path != "" {
			fmt.Fprintf(g.errOut, "using the local network's subnet owner key %s\n", path)
		}
	}
	if path == "" {
		return nil, usageError{fmt.Errorf("give the subnet owner's key with --key-file FILE (or $%s)", keyFileEnv)}
	}
	key, err := subnet.ReadKey(path)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(g.errOut, "warning: key file %s is readable by others (mode %v); chmod 600 it\n", path, info.Mode().Perm())
	}
	return subnet.NewAdmin(s.uri, s.subnetID, key), nil
}

// localOwnerKey is the local network's owner key file if chain is its
// chain.
func localOwnerKey(chain string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := localnet.Open(ctx, filepath.Join(defaultBuildDir(), "network"), nil)
	if err != nil || n.ChainID.String() != chain {
		return ""
	}
	if _, err := n.OwnerKey(); err != nil {
		return ""
	}
	return n.OwnerKeyPath()
}

// statusReport is `schain validators status --json`.
type statusReport struct {
	SubnetID  ids.ID              `json:"subnetID"`
	PChain    *subnet.Facts       `json:"pChain"`
	Epoch     *api.EpochReply     `json:"epoch"`
	Standings []eviction.Standing `json:"validators"`
}

func newValidatorsStatusCmd(g *globals, vf *validatorsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "The subnet's validators on the P-chain and in S-Chain's epoch: membership, last heartbeat, how long each is out",
		Long: `The subnet's validators on the P-chain now and in S-Chain's current epoch:
whether ranges are pinned to each (member), its last heartbeat, and how long
it has been out of the membership, in liveness epochs and time. S-Chain's
epoch follows the P-chain at ACP-181 epoch boundaries (30 s locally, 5
minutes on mainnet), so a validator just added or removed shows on one side
only for that long.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := g.apiContext(cmd)
			defer cancel()
			s, err := vf.open(ctx, g)
			if err != nil {
				return err
			}
			e, err := s.router.GetEpoch(ctx)
			if err != nil {
				return err
			}
			f, err := subnet.Read(ctx, s.node, s.subnetID)
			if err != nil {
				return err
			}
			rep := statusReport{SubnetID: s.subnetID, PChain: f, Epoch: e, Standings: eviction.Assess(e, f)}
			return g.emit(rep, statusFields(rep, time.Now()))
		},
	}
}

func statusFields(rep statusReport, now time.Time) []field {
	f, e := rep.PChain, rep.Epoch
	owners := make([]string, len(f.Owner.Addresses))
	for i, a := range f.Owner.Addresses {
		owners[i] = f.FormatAddress(a)
	}
	kind := "permissioned"
	switch {
	case f.ConversionID != ids.Empty:
		kind = "converted to an L1"
	case f.TransformationTxID != ids.Empty:
		kind = "permissionless"
	}
	epochLen := time.Duration(e.EpochDurationMs) * time.Millisecond
	members := fmt.Sprintf("%d of %d members", len(e.Members), len(e.Validators))
	if e.Fallback {
		members += " (fallback: no recent heartbeat, all validators are members)"
	}
	fs := []field{
		{"subnet", fmt.Sprintf("%s (%s; owner %s, threshold %d)", f.SubnetID, kind, strings.Join(owners, ", "), f.Owner.Threshold)},
		{"pChain", fmt.Sprintf("height %d, time %s, %d validators", f.Height, f.Time.UTC().Format(time.RFC3339), len(f.Validators))},
		{"epoch", fmt.Sprintf("P-chain height %d, liveness epoch %d (%s each, K=%d): %s", e.PChainHeight, e.Round, epochLen, e.LivenessEpochs, members)},
	}
	for _, st := range rep.Standings {
		fs = append(fs, field{"validator", describeStanding(st, epochLen, now)})
	}
	return fs
}

// describeStanding is one validator's line in `schain validators status`.
func describeStanding(s eviction.Standing, epochLen time.Duration, now time.Time) string {
	var parts []string
	switch {
	case !s.InEpoch:
		parts = append(parts, "on the P-chain, not yet in S-Chain's epoch")
	case s.Member:
		parts = append(parts, "member")
	case s.OutRounds == 0:
		parts = append(parts, "NOT a member, within its grace after joining")
	default:
		parts = append(parts, fmt.Sprintf("OUT for %d liveness epoch(s) (%s, since %s)",
			s.OutRounds, s.Out(epochLen), s.OutSince.UTC().Format(time.TimeOnly)))
	}
	if s.InEpoch && !s.OnPChain {
		parts = append(parts, "removed from the P-chain (S-Chain's epoch drops it at its next ACP-181 epoch)")
	}
	switch {
	case s.LastHeartbeat != nil:
		ago := now.Sub(*s.LastHeartbeatAt).Round(time.Second)
		parts = append(parts, fmt.Sprintf("last heartbeat in epoch %d (at most %s ago)", *s.LastHeartbeat, ago))
	case s.InEpoch:
		parts = append(parts, "no heartbeat yet")
	}
	return fmt.Sprintf("%s weight %d: %s", s.NodeID, s.Weight, strings.Join(parts, ", "))
}

// changeReport is the --json output of remove and add.
type changeReport struct {
	Plan    *subnet.Plan    `json:"plan"`
	DryRun  bool            `json:"dryRun"`
	Receipt *subnet.Receipt `json:"receipt,omitempty"`
	// EpochFollowedMs: with --wait, how long after the commit S-Chain's
	// epoch reflected the change.
	EpochFollowedMs *int64 `json:"epochFollowedMs,omitempty"`
}

func newValidatorsRemoveCmd(g *globals, vf *validatorsFlags) *cobra.Command {
	var dryRun, force, wait bool
	cmd := &cobra.Command{
		Use:   "remove NODEID [--dry-run] [--force] [--wait]",
		Short: "Remove a validator from the subnet (RemoveSubnetValidatorTx, signed with the subnet owner's key)",
		Long: `Remove a validator from the subnet with a RemoveSubnetValidatorTx signed
with the subnet owner's key, and wait until the P-chain commits it. This
ends the block gaps a dead validator causes (its proposer slots); its
ranges have already moved if it stopped heartbeating K+1 epochs ago.

Checked first: the key controls the subnet (permissioned, threshold 1),
NODEID validates it and is not its last validator, the key's P-chain
balance pays the fee, and NODEID is not a member of S-Chain's epoch (it
still heartbeats: removing it moves its ranges; --force does it anyway).
--dry-run runs every check, prints the transaction and its fee, and issues
nothing. --wait also waits until S-Chain's epoch drops the validator (up to
an ACP-181 epoch: 30 s locally, 5 minutes on mainnet; --timeout is raised
to 2 minutes unless given).

A removed validator comes back with "schain validators add".`,
		Args: exactArgs(1, "NODEID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			nodeID, err := ids.NodeIDFromString(argv[0])
			if err != nil {
				return usageError{fmt.Errorf("NODEID %q: %w", argv[0], err)}
			}
			ctx, cancel := changeContext(cmd, g, wait)
			defer cancel()
			s, err := vf.open(ctx, g)
			if err != nil {
				return err
			}
			liveness, err := checkNotMember(ctx, s, nodeID, force)
			if err != nil {
				return err
			}
			a, err := vf.admin(g, s)
			if err != nil {
				return err
			}
			p, err := a.PlanRemove(ctx, nodeID)
			if err != nil {
				return err
			}
			p.Checks = append(p.Checks, liveness)
			return g.issue(ctx, s, a, p, dryRun, wait)
		},
	}
	cmd.Flags().StringVar(&vf.keyFile, "key-file", "", "file with the subnet owner's key (default $"+keyFileEnv+", or the local network's)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check everything and print the transaction, but issue nothing")
	cmd.Flags().BoolVar(&force, "force", false, "remove the validator even if it is a member of S-Chain's epoch (it heartbeats)")
	cmd.Flags().BoolVar(&wait, "wait", false, "also wait until S-Chain's epoch no longer lists the validator")
	return cmd
}

// checkNotMember refuses to remove a validator S-Chain counts as live,
// unless forced, and says what it found.
func checkNotMember(ctx context.Context, s *session, nodeID ids.NodeID, force bool) (string, error) {
	e, err := s.router.GetEpoch(ctx)
	if err != nil {
		if force {
			return fmt.Sprintf("S-Chain's epoch could not be read (--force): %v", err), nil
		}
		return "", fmt.Errorf("reading S-Chain's epoch to check that %s is not a live member (--force skips the check): %w", nodeID, err)
	}
	for _, st := range eviction.Assess(e, nil) {
		if st.NodeID != nodeID {
			continue
		}
		switch {
		case st.Member && !force:
			return "", fmt.Errorf("%w: %s in liveness epoch %d; removing it moves its ranges (pass --force to remove it anyway)", errLiveMember, nodeID, e.Round)
		case st.Member:
			return fmt.Sprintf("%s is a member of S-Chain's epoch %d (--force)", nodeID, e.Round), nil
		default:
			return fmt.Sprintf("%s is not a member of S-Chain's epoch %d (out for %d liveness epoch(s))", nodeID, e.Round, st.OutRounds), nil
		}
	}
	return fmt.Sprintf("%s is not in S-Chain's epoch %d", nodeID, e.Round), nil
}

func newValidatorsAddCmd(g *globals, vf *validatorsFlags) *cobra.Command {
	var (
		dryRun, wait, force bool
		weight              uint64
		end                 string
	)
	cmd := &cobra.Command{
		Use:   "add NODEID [--weight W] [--end TIME] [--dry-run] [--wait]",
		Short: "Add a validator to the subnet (AddSubnetValidatorTx, signed with the subnet owner's key)",
		Long: `Add a validator to the subnet with an AddSubnetValidatorTx signed with the
subnet owner's key, and wait until the P-chain commits it.

NODEID must validate the primary network; its BLS key is the one it
registered there (shown in the plan: S-Chain verifies its signatures with
it). --weight defaults to the weight every current validator has; --end (an
RFC 3339 time, or a duration from now such as 720h) defaults to the end of
its primary-network validation, the latest the P-chain allows. The P-chain
starts the validator when it commits the transaction. A node that is not
connected is refused (--force adds it anyway): as a validator that never
proposes, it would bring back the block gaps of a dead one.

The node heartbeats once S-Chain's epoch lists it (up to an ACP-181 epoch
after the commit) and owns ranges from the liveness epoch after its
heartbeat lands. --dry-run checks and prints without issuing; --wait also
waits until S-Chain's epoch lists it (--timeout is raised to 2 minutes
unless given).`,
		Args: exactArgs(1, "NODEID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			nodeID, err := ids.NodeIDFromString(argv[0])
			if err != nil {
				return usageError{fmt.Errorf("NODEID %q: %w", argv[0], err)}
			}
			req := subnet.Addition{NodeID: nodeID, Weight: weight, AllowOffline: force}
			if req.End, err = parseEnd(end, time.Now()); err != nil {
				return err
			}
			ctx, cancel := changeContext(cmd, g, wait)
			defer cancel()
			s, err := vf.open(ctx, g)
			if err != nil {
				return err
			}
			a, err := vf.admin(g, s)
			if err != nil {
				return err
			}
			p, err := a.PlanAdd(ctx, req)
			if err != nil {
				return err
			}
			return g.issue(ctx, s, a, p, dryRun, wait)
		},
	}
	cmd.Flags().StringVar(&vf.keyFile, "key-file", "", "file with the subnet owner's key (default $"+keyFileEnv+", or the local network's)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check everything and print the transaction, but issue nothing")
	cmd.Flags().BoolVar(&wait, "wait", false, "also wait until S-Chain's epoch lists the validator")
	cmd.Flags().BoolVar(&force, "force", false, "add the node even if it is not connected")
	cmd.Flags().Uint64Var(&weight, "weight", 0, "sampling weight (default: the weight all current validators have)")
	cmd.Flags().StringVar(&end, "end", "", "end of the validation: RFC 3339 time or duration from now (default: its primary-network validation's end)")
	return cmd
}

// parseEnd reads --end: empty (the default), an RFC 3339 time, or a
// duration from now.
func parseEnd(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, usageError{fmt.Errorf("--end %q is neither an RFC 3339 time nor a positive duration", s)}
	}
	return now.Add(d), nil
}

// changeContext bounds remove and add by --timeout, at least 2 minutes with
// --wait unless --timeout was given.
func changeContext(cmd *cobra.Command, g *globals, wait bool) (context.Context, context.CancelFunc) {
	timeout := g.timeout
	if wait && !cmd.Flags().Changed("timeout") {
		timeout = max(timeout, 2*time.Minute)
	}
	return context.WithTimeout(cmd.Context(), timeout)
}

// issue prints a plan and, unless a dry run, issues it and says what
// follows.
func (g *globals) issue(ctx context.Context, s *session, a *subnet.Admin, p *subnet.Plan, dryRun, wait bool) error {
	rep := changeReport{Plan: p, DryRun: dryRun}
	fs := planFields(p)
	if dryRun {
		fs = append(fs, field{"dry run", "nothing issued (drop --dry-run to issue)"})
		return g.emit(rep, fs)
	}
	if !g.json {
		if err := writeFields(g.out, fs); err != nil {
			return err
		}
		fs = nil
	}
	rc, err := a.Issue(ctx, p)
	if err != nil {
		return err
	}
	rep.Receipt = rc
	fs = append(fs, field{"txID", rc.TxID}, field{"committed", fmt.Sprintf("at P-chain height %d", rc.PChainHeight)})
	if !wait {
		fs = append(fs, field{"next", "S-Chain's epoch follows at its next ACP-181 epoch (30 s locally, 5 minutes on mainnet): see schain validators status"})
		return g.emit(rep, fs)
	}
	began := time.Now()
	if err := waitEpochFollows(ctx, s.router, p); err != nil {
		return errors.Join(err, g.emit(rep, fs))
	}
	ms := time.Since(began).Milliseconds()
	rep.EpochFollowedMs = &ms
	fs = append(fs, field{"epoch", fmt.Sprintf("S-Chain's epoch reflects it %s after the commit", time.Since(began).Round(100*time.Millisecond))})
	return g.emit(rep, fs)
}

func planFields(p *subnet.Plan) []field {
	fs := []field{{"action", p.Action}, {"subnet", p.SubnetID}, {"nodeID", p.NodeID}, {"weight", p.Weight}}
	if p.End != nil {
		fs = append(fs, field{"end", p.End.UTC().Format(time.RFC3339)})
	}
	if p.PublicKey != "" {
		fs = append(fs, field{"blsKey", p.PublicKey})
	}
	fs = append(fs,
		field{"validators", fmt.Sprintf("%d after the change", p.ValidatorsAfter)},
		field{"pChainHeight", p.PChainHeight},
		field{"fee", fmt.Sprintf("%d nAVAX, paid by %s", p.FeeNAVAX, p.Payer)})
	for _, c := range p.Checks {
		fs = append(fs, field{"check", c})
	}
	return fs
}

// waitEpochFollows polls S-Chain's epoch until it lists the added
// validator, or no longer lists the removed one.
func waitEpochFollows(ctx context.Context, r *client.Router, p *subnet.Plan) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		e, err := r.GetEpoch(ctx)
		if err == nil {
			listed := false
			for _, v := range e.Validators {
				listed = listed || v.NodeID == p.NodeID
			}
			if listed == (p.Action == subnet.Add) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for S-Chain's epoch to reflect the %s of %s: %w", p.Action, p.NodeID, ctx.Err())
		case <-tick.C:
		}
	}
}

func newValidatorsWatchCmd(g *globals, vf *validatorsFlags) *cobra.Command {
	var (
		policy   eviction.Policy
		interval time.Duration
		dryRun   bool
		once     bool
	)
	cmd := &cobra.Command{
		Use:   "watch --remove-after M [--min-validators N] [--interval D] [--dry-run] [--once]",
		Short: "Remove, by policy, a validator out of S-Chain's membership for M liveness epochs",
		Long: `Watch S-Chain's liveness records and remove from the subnet a validator that
has been out of the membership for M liveness epochs (--remove-after, no
default: the policy is off unless asked for), one at a time, as "schain
validators remove" would. Runs until interrupted; --once makes one pass.

Guards: nobody is removed while S-Chain's membership is a fallback (no
recent heartbeat at all: the chain, not a validator, is stuck), nor when
fewer than --min-validators would remain; after a removal, the next waits
until S-Chain's epoch has dropped the removed validator; a validator re-added
to the subnet gets K+1 epochs to heartbeat before it counts as out. A removed
validator that comes back must be added again ("schain validators add").

Every pass is bounded by --timeout; errors (a node down, a dropped
transaction) are printed and retried at the next pass, except a key or
subnet that cannot work (exit 8). --dry-run plans each removal and issues
nothing. With --json, one JSON object per pass.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := policy.Verify(); err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			octx, cancel := g.apiContext(cmd)
			s, err := vf.open(octx, g)
			if err != nil {
				cancel()
				return err
			}
			a, err := vf.admin(g, s)
			if err != nil {
				cancel()
				return err
			}
			_, err = a.Authorize(octx)
			e, eerr := s.router.GetEpoch(octx)
			cancel()
			if err = errors.Join(err, eerr); err != nil {
				return err
			}
			epochLen := time.Duration(e.EpochDurationMs) * time.Millisecond
			if interval <= 0 {
				interval = max(epochLen/3, time.Second)
			}
			w := &eviction.Watcher{Policy: policy, Epochs: s.router, Subnet: a, DryRun: dryRun, PassTimeout: g.timeout}
			rep := &watchReporter{g: g, epochLen: epochLen}
			if !g.json {
				mode := ""
				if dryRun {
					mode = " (dry run: nothing is issued)"
				}
				fmt.Fprintf(g.out, "watching subnet %s through %s: removing a validator out of the membership for %d liveness epoch(s) (%s), keeping at least %d; a pass every %s%s\n",
					s.subnetID, s.uri, policy.After, time.Duration(policy.After)*epochLen, policy.MinValidators, interval, mode)
			}
			if once {
				pctx, pcancel := context.WithTimeout(ctx, g.timeout)
				defer pcancel()
				out, err := w.Pass(pctx)
				if err != nil {
					return err
				}
				rep.report(out, nil)
				return nil
			}
			return w.Run(ctx, interval, rep.report)
		},
	}
	cmd.Flags().StringVar(&vf.keyFile, "key-file", "", "file with the subnet owner's key (default $"+keyFileEnv+", or the local network's)")
	cmd.Flags().Uint64Var(&policy.After, "remove-after", 0, "remove a validator out of the membership for this many liveness epochs (required, at least 1)")
	cmd.Flags().IntVar(&policy.MinValidators, "min-validators", eviction.DefaultMinValidators, "never leave fewer validators on the subnet")
	cmd.Flags().DurationVar(&interval, "interval", 0, "time between passes (default: a third of a liveness epoch)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "plan removals but issue nothing")
	cmd.Flags().BoolVar(&once, "once", false, "make one pass and exit")
	return cmd
}

// watchReporter prints each pass of watch: in text, a line when the
// verdict changes or something is done; with --json, every pass.
type watchReporter struct {
	g        *globals
	epochLen time.Duration
	last     string
}

// watchLine is one pass in `schain validators watch --json`.
type watchLine struct {
	Time    time.Time         `json:"time"`
	Outcome *eviction.Outcome `json:"outcome,omitempty"`
	Error   *failure          `json:"error,omitempty"`
}

func (r *watchReporter) report(out *eviction.Outcome, err error) {
	now := time.Now()
	if r.g.json {
		l := watchLine{Time: now, Outcome: out}
		if err != nil {
			f := describe(err, r.g)
			l.Error = &f
		}
		_ = json.NewEncoder(r.g.out).Encode(l)
		return
	}
	stamp := now.Format(time.TimeOnly)
	if err != nil {
		fmt.Fprintf(r.g.errOut, "%s error: %s\n", stamp, describe(err, r.g).Line)
		r.last = ""
		return
	}
	switch {
	case out.Receipt != nil:
		fmt.Fprintf(r.g.out, "%s removed %s, out of the membership for %d liveness epoch(s): tx %s committed at P-chain height %d\n",
			stamp, out.Decision.NodeID, out.Decision.OutRounds, out.Receipt.TxID, out.Receipt.PChainHeight)
	case out.Plan != nil:
		fmt.Fprintf(r.g.out, "%s would remove %s, out of the membership for %d liveness epoch(s): fee %d nAVAX (dry run: nothing issued)\n",
			stamp, out.Decision.NodeID, out.Decision.OutRounds, out.Plan.FeeNAVAX)
	case out.Decision.Reason != r.last:
		fmt.Fprintf(r.g.out, "%s liveness epoch %d: %s\n", stamp, out.Round, out.Decision.Reason)
	}
	r.last = out.Decision.Reason
}

// validatorsFailure names the errors of the validators commands and says
// what to do; ok is false for errors of other kinds.
func validatorsFailure(err error) (name, line string, code int, ok bool) {
	type class struct {
		target error
		name   string
		code   int
		hint   string
	}
	for _, c := range []class{
		{errLiveMember, "live_member", exitRefused, ""},
		{subnet.ErrKeyFile, "key_file", exitUsage, "give the subnet owner's key with --key-file"},
		{subnet.ErrNotOwner, "not_owner", exitRefused, "sign with the key that created the subnet, or its current owner"},
		{subnet.ErrThreshold, "threshold", exitRefused, "this command signs with one key only"},
		{subnet.ErrOwnerLocked, "owner_locked", exitRefused, "retry after the locktime"},
		{subnet.ErrNotPermissioned, "not_permissioned", exitRefused, ""},
		{subnet.ErrNoSubnet, "no_subnet", exitRefused, "check --subnet, or --chain and --rpc"},
		{subnet.ErrNotValidator, "not_validator", exitRefused, "see schain validators status"},
		{subnet.ErrLastValidator, "last_validator", exitRefused, "add another validator first"},
		{subnet.ErrAlreadyValidator, "already_validator", exitRefused, ""},
		{subnet.ErrNotPrimaryValidator, "not_primary_validator", exitRefused, "stake it on the primary network first"},
		{subnet.ErrEndTime, "end_time", exitRefused, "adjust --end"},
		{subnet.ErrOffline, "offline", exitRefused, "start the node first, or pass --force"},
		{subnet.ErrWeight, "weight", exitRefused, "give --weight"},
		{subnet.ErrInsufficientFunds, "insufficient_funds", exitRefused, "fund the key's P-chain address"},
		{eviction.ErrPolicy, "usage", exitUsage, "see schain validators watch --help"},
		{subnet.ErrRejected, "rejected", exitRejected, "the P-chain's reason is above; retrying will not help unless it changes"},
		{subnet.ErrPChainAPI, "unavailable", exitUnavailable, "is --rpc an avalanchego node with its P-chain API?"},
	} {
		if errors.Is(err, c.target) {
			line := err.Error()
			if c.hint != "" {
				line += " (" + c.hint + ")"
			}
			return c.name, line, c.code, true
		}
	}
	return "", "", 0, false
}

func isValidatorsError(err error) bool {
	_, _, _, ok := validatorsFailure(err)
	return ok
}
