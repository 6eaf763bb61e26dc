package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/eviction"
)

func newValidatorsWatchCmd(g *Globals, vf *validatorsFlags) *cobra.Command {
	var (
		policy   eviction.Policy
		interval time.Duration
		dryRun   bool
		once     bool
	)
	cmd := &cobra.Command{
		Use:   "watch --remove-after M [--min-validators N] [--interval D] [--dry-run] [--once]",
		Short: "Remove, by policy, a validator out of S-Chain's membership for M liveness rounds",
		Long: `Watch S-Chain's liveness records and remove from the subnet a validator that
has been out of the membership for M liveness rounds (--remove-after, no
default: the policy is off unless asked for), one at a time, as "schain
validators remove" would. Runs until interrupted; --once makes one pass.

Guards: nobody is removed while S-Chain's membership is a fallback (no
recent heartbeat at all: the chain, not a validator, is stuck), nor when
fewer than --min-validators would remain; after a removal, the next waits
until S-Chain's membership view has dropped the removed validator; a validator re-added
to the subnet gets K+1 rounds to heartbeat before it counts as out. A removed
validator that comes back must be added again ("schain validators add").

Each pass reads the newest membership view of the --rpc nodes, which must
hold more than 2/3 of the stake (a node that stopped following the chain
still counts validators out whose heartbeats landed since), and never acts
on a view older than one it already saw.

Every pass is bounded by --timeout; errors (a node down, a dropped
transaction, too few nodes answering) are printed and retried at the next
pass, except a key or subnet that cannot work (exit 8). --dry-run plans
each removal and issues nothing. With --json, one JSON object per pass.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := policy.Verify(); err != nil {
				return UsageError{err}
			}
			ctx := cmd.Context()
			octx, cancel := g.APIContext(cmd)
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
			e, eerr := s.router.GetMembership(octx)
			cancel()
			if err = errors.Join(err, eerr); err != nil {
				return err
			}
			roundLen := time.Duration(e.RoundDurationMs) * time.Millisecond
			if interval <= 0 {
				interval = max(roundLen/3, time.Second)
			}
			// Fresh reads weigh answers by the subnet's P-chain set as the
			// node the watcher removes through sees it, not as any answer
			// says.
			fresh, err := g.Router(func(c *client.RouterConfig) { c.Stake = client.PChainStake(s.uri, g.Chain, nil) })
			if err != nil {
				return err
			}
			w := &eviction.Watcher{Policy: policy, Memberships: fresh.Fresh(), Subnet: a, DryRun: dryRun, PassTimeout: g.Timeout}
			rep := &watchReporter{g: g, roundLen: roundLen}
			if !g.JSON {
				mode := ""
				if dryRun {
					mode = " (dry run: nothing is issued)"
				}
				g.Note("watching subnet %s through %s: removing a validator out of the membership for %d liveness round(s) (%s), keeping at least %d; a pass every %s%s\n",
					s.subnetID, s.uri, policy.After, time.Duration(policy.After)*roundLen, policy.MinValidators, interval, mode)
			}
			if once {
				pctx, pcancel := context.WithTimeout(ctx, g.Timeout)
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
	cmd.Flags().Uint64Var(&policy.After, "remove-after", 0, "remove a validator out of the membership for this many liveness rounds (required, at least 1)")
	cmd.Flags().IntVar(&policy.MinValidators, "min-validators", eviction.DefaultMinValidators, "never leave fewer validators on the subnet")
	cmd.Flags().DurationVar(&interval, "interval", 0, "time between passes (default: a third of a liveness round)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "plan removals but issue nothing")
	cmd.Flags().BoolVar(&once, "once", false, "make one pass and exit")
	MustMarkRequired(cmd, "remove-after")
	return cmd
}

// watchReporter prints each pass of watch: in text, a line when the
// verdict changes or something is done; with --json, every pass.
type watchReporter struct {
	g        *Globals
	roundLen time.Duration
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
	if r.g.JSON {
		l := watchLine{Time: now, Outcome: out}
		if err != nil {
			f := describe(err, r.g)
			l.Error = &f
		}
		_ = r.g.stream(l)
		return
	}
	stamp := now.Format(time.TimeOnly)
	if err != nil {
		fmt.Fprintf(r.g.ErrOut, "%s error: %s\n", stamp, describe(err, r.g).Line)
		r.last = ""
		return
	}
	switch {
	case out.Receipt != nil:
		fmt.Fprintf(r.g.Out, "%s removed %s, out of the membership for %d liveness round(s): tx %s committed at P-chain height %d\n",
			stamp, out.Decision.NodeID, out.Decision.OutRounds, out.Receipt.TxID, out.Receipt.PChainHeight)
	case out.Plan != nil:
		fmt.Fprintf(r.g.Out, "%s would remove %s, out of the membership for %d liveness round(s): fee %d nAVAX (dry run: nothing issued)\n",
			stamp, out.Decision.NodeID, out.Decision.OutRounds, out.Plan.FeeNAVAX)
	case out.Decision.Reason != r.last:
		fmt.Fprintf(r.g.Out, "%s liveness round %d: %s\n", stamp, out.Round, out.Decision.Reason)
	}
	r.last = out.Decision.Reason
}
