package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/eviction"
	"github.com/s-chain/schain/operator/subnet"
)

// changeReport is the --json output of remove and add.
type changeReport struct {
	Plan    *subnet.Plan    `json:"plan"`
	DryRun  bool            `json:"dryRun"`
	Receipt *subnet.Receipt `json:"receipt,omitempty"`
	// MembershipFollowedMs: with --wait, how long after the commit S-Chain's
	// membership view reflected the change.
	MembershipFollowedMs *int64 `json:"membershipFollowedMs,omitempty"`
}

func newValidatorsRemoveCmd(g *Globals, vf *validatorsFlags) *cobra.Command {
	var dryRun, force, wait bool
	cmd := &cobra.Command{
		Use:   "remove NODEID [--dry-run] [--force] [--wait]",
		Short: "Remove a validator from the subnet (RemoveSubnetValidatorTx, signed with the subnet owner's key)",
		Long: `Remove a validator from the subnet with a RemoveSubnetValidatorTx signed
with the subnet owner's key, and wait until the P-chain commits it. This
ends the block gaps a dead validator causes (its proposer slots); its
ranges have already moved if it stopped heartbeating K+1 rounds ago.

Checked first: the key controls the subnet (permissioned, threshold 1),
NODEID validates it and is not its last validator, the key's P-chain
balance pays the fee, and NODEID is not a member of S-Chain's membership view (it
still heartbeats: removing it moves its ranges; --force does it anyway).
--dry-run runs every check, prints the transaction and its fee, and issues
nothing. --wait also waits until S-Chain's membership view drops the validator (up to
an ACP-181 epoch: 30 s locally, 5 minutes on mainnet; --timeout is raised
to 2 minutes unless given).

A removed validator comes back with "schain validators add".`,
		Args: ExactArgs(1, "NODEID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			nodeID, err := ids.NodeIDFromString(argv[0])
			if err != nil {
				return UsageError{fmt.Errorf("NODEID %q: %w", argv[0], err)}
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
	cmd.Flags().BoolVar(&force, "force", false, "remove the validator even if it is a member of S-Chain's membership view (it heartbeats)")
	cmd.Flags().BoolVar(&wait, "wait", false, "also wait until S-Chain's membership view no longer lists the validator")
	return cmd
}

// checkNotMember refuses to remove a validator S-Chain counts as live,
// unless forced, and says what it found.
func checkNotMember(ctx context.Context, s *session, nodeID ids.NodeID, force bool) (string, error) {
	e, err := s.router.GetMembership(ctx)
	if err != nil {
		if force {
			return fmt.Sprintf("S-Chain's membership view could not be read (--force): %v", err), nil
		}
		return "", fmt.Errorf("reading S-Chain's membership view to check that %s is not a live member (--force skips the check): %w", nodeID, err)
	}
	for _, st := range eviction.Assess(e, nil) {
		if st.NodeID != nodeID {
			continue
		}
		switch {
		case st.Member && !force:
			return "", fmt.Errorf("%w: %s in liveness round %d; removing it moves its ranges (pass --force to remove it anyway)", errLiveMember, nodeID, e.Round)
		case st.Member:
			return fmt.Sprintf("%s is a member of S-Chain's membership of round %d (--force)", nodeID, e.Round), nil
		default:
			return fmt.Sprintf("%s is not a member of S-Chain's membership of round %d (out for %d liveness round(s))", nodeID, e.Round, st.OutRounds), nil
		}
	}
	return fmt.Sprintf("%s is not in S-Chain's membership of round %d", nodeID, e.Round), nil
}

func newValidatorsAddCmd(g *Globals, vf *validatorsFlags) *cobra.Command {
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

The node heartbeats once S-Chain's membership view lists it (up to an ACP-181 epoch
after the commit) and owns ranges from the liveness round after its
heartbeat lands. --dry-run checks and prints without issuing; --wait also
waits until S-Chain's membership view lists it (--timeout is raised to 2 minutes
unless given).`,
		Args: ExactArgs(1, "NODEID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			nodeID, err := ids.NodeIDFromString(argv[0])
			if err != nil {
				return UsageError{fmt.Errorf("NODEID %q: %w", argv[0], err)}
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
	cmd.Flags().BoolVar(&wait, "wait", false, "also wait until S-Chain's membership view lists the validator")
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
		return time.Time{}, UsageError{fmt.Errorf("--end %q is neither an RFC 3339 time nor a positive duration", s)}
	}
	return now.Add(d), nil
}

// changeContext bounds remove and add by --timeout, at least 2 minutes with
// --wait unless --timeout was given.
func changeContext(cmd *cobra.Command, g *Globals, wait bool) (context.Context, context.CancelFunc) {
	timeout := g.Timeout
	if wait && !cmd.Flags().Changed("timeout") {
		timeout = max(timeout, 2*time.Minute)
	}
	return context.WithTimeout(cmd.Context(), timeout)
}

// issue prints a plan and, unless a dry run, issues it and says what
// follows.
func (g *Globals) issue(ctx context.Context, s *session, a *subnet.Admin, p *subnet.Plan, dryRun, wait bool) error {
	rep := changeReport{Plan: p, DryRun: dryRun}
	fs := planFields(p)
	if dryRun {
		fs = append(fs, Field{"dry run", "nothing issued (drop --dry-run to issue)"})
		return g.Emit(rep, fs)
	}
	if !g.JSON {
		// The plan first: issuing waits for the P-chain.
		if err := WriteFields(g.Out, fs); err != nil {
			return err
		}
		fs = nil
	}
	rc, err := a.Issue(ctx, p)
	if err != nil {
		return err
	}
	rep.Receipt = rc
	fs = append(fs, Field{"txID", rc.TxID}, Field{"committed", fmt.Sprintf("at P-chain height %d", rc.PChainHeight)})
	if !wait {
		fs = append(fs, Field{"next", "S-Chain's membership view follows at its next ACP-181 epoch (30 s locally, 5 minutes on mainnet): see schain validators status"})
		return g.Emit(rep, fs)
	}
	began := time.Now()
	if err := waitMembershipFollows(ctx, s.router, p); err != nil {
		return errors.Join(err, g.Emit(rep, fs))
	}
	ms := time.Since(began).Milliseconds()
	rep.MembershipFollowedMs = &ms
	fs = append(fs, Field{"membership", fmt.Sprintf("S-Chain's membership view reflects it %s after the commit", time.Since(began).Round(100*time.Millisecond))})
	return g.Emit(rep, fs)
}

func planFields(p *subnet.Plan) []Field {
	fs := []Field{{"action", p.Action}, {"subnet", p.SubnetID}, {"nodeID", p.NodeID}, {"weight", p.Weight}}
	if p.End != nil {
		fs = append(fs, Field{"end", p.End.UTC().Format(time.RFC3339)})
	}
	if p.PublicKey != "" {
		fs = append(fs, Field{"blsKey", p.PublicKey})
	}
	fs = append(fs,
		Field{"validators", fmt.Sprintf("%d after the change", p.ValidatorsAfter)},
		Field{"pChainHeight", p.PChainHeight},
		Field{"fee", fmt.Sprintf("%d nAVAX, paid by %s", p.FeeNAVAX, p.Payer)})
	for _, c := range p.Checks {
		fs = append(fs, Field{"check", c})
	}
	return fs
}

// waitMembershipFollows polls S-Chain's membership view until it lists the added
// validator, or no longer lists the removed one.
func waitMembershipFollows(ctx context.Context, r *client.Router, p *subnet.Plan) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		e, err := r.GetMembership(ctx)
		if err == nil {
			listed := false
			for _, v := range e.Validators {
				listed = listed || ids.NodeID(v.NodeID) == p.NodeID
			}
			if listed == (p.Action == subnet.Add) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for S-Chain's membership view to reflect the %s of %s: %w", p.Action, p.NodeID, ctx.Err())
		case <-tick.C:
		}
	}
}
