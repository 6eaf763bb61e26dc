package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

func newReceiptCmd(g *Globals) *cobra.Command {
	var wait, final bool
	cmd := &cobra.Command{
		Use:   "receipt TXID [--wait | --final]",
		Short: "Show a transaction's receipt",
		Long: `Show a transaction's receipt. With --wait, poll until it is accepted or
rejected, following re-pins to the replacement transaction; with --final,
also until a finality certificate covers it. "schain verify TXID" checks the
certificate against the P-chain.`,
		Args: ExactArgs(1, "TXID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			txID, err := parseID(argv[0])
			if err != nil {
				return UsageError{err}
			}
			r, err := g.Router()
			if err != nil {
				return err
			}
			ctx, cancel := g.APIContext(cmd)
			defer cancel()
			rc, err := waitFor(ctx, r, txID, wait, final)
			if !wait && !final {
				rc, err = r.GetReceipt(ctx, txID)
			}
			if rc == nil || (err != nil && rc.Status != api.StatusRejected) {
				return err
			}
			return errors.Join(err, g.Emit(rc, receiptFields(rc)))
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the transaction is decided")
	cmd.Flags().BoolVar(&final, "final", false, "wait until the transaction is decided and a finality certificate covers it")
	cmd.MarkFlagsMutuallyExclusive("wait", "final")
	return cmd
}

func newOwnerCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "owner RANGE",
		Short: "Show a range's owner in the membership the next block will have",
		Args:  ExactArgs(1, "RANGE"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				o, err := r.GetOwner(ctx, argv[0])
				if err != nil {
					return err
				}
				return g.Emit(o, []Field{{"range", o.Range}, {"owner", o.Owner}, {"pChainHeight", o.PChainHeight}, {"fingerprint", o.Fingerprint}})
			})
		},
	}
}

func newMembershipCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "membership",
		Short: "Show the membership the next block will have: members ranges are pinned to, and every validator's liveness",
		Args:  ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				e, err := r.GetMembership(ctx)
				if err != nil {
					return err
				}
				fs := []Field{
					{"pChainHeight", e.PChainHeight}, {"round", e.Round}, {"generation", e.Generation},
					{"fingerprint", e.Fingerprint}, {"nodeID", e.NodeID}, {"members", len(e.Members)},
					{"fallback", e.Fallback},
					{"liveness", fmt.Sprintf("rounds of %s, a heartbeat lasts %d", time.Duration(e.RoundDurationMs)*time.Millisecond, e.LivenessRounds)},
				}
				for _, v := range e.Validators {
					fs = append(fs, Field{"validator", DescribeLiveness(v)})
				}
				return g.Emit(e, fs)
			})
		},
	}
}

func newAllocCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "alloc RANGE",
		Short: "Show a range's next unissued id (accepted state)",
		Args:  ExactArgs(1, "RANGE"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				a, err := r.GetAllocation(ctx, argv[0])
				if err != nil {
					return err
				}
				return g.Emit(a, []Field{{"range", a.Range}, {"next", a.Next}})
			})
		},
	}
}

func newManifestCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "manifest BUCKET KEY",
		Short: "Show an accepted object manifest",
		Args:  ExactArgs(2, "BUCKET KEY"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				reply, err := r.GetManifest(ctx, argv[0], argv[1])
				if err != nil {
					return err
				}
				m := reply.Manifest
				fs := []Field{{"bucket", m.Bucket}, {"key", m.Key}, {"size", m.Size}, {"contentHash", m.ContentHash}, {"deleted", m.Deleted}}
				for _, c := range m.Chunks {
					fs = append(fs, Field{"chunk", chunkString(c)})
				}
				return g.Emit(reply, fs)
			})
		},
	}
}

// nodeResult is one endpoint's answer in `schain node --json`.
type nodeResult struct {
	URI   string         `json:"uri"`
	Node  *api.NodeReply `json:"node,omitempty"`
	Error *failure       `json:"error,omitempty"`
}

var errSomeNodesFailed = errors.New("some nodes did not answer")

func newNodeCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "node",
		Short: "Identify the node behind each --rpc URI",
		Args:  ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := g.Router()
			if err != nil {
				return err
			}
			ctx, cancel := g.APIContext(cmd)
			defer cancel()
			var (
				results []nodeResult
				fs      []Field
				failed  int
			)
			for _, c := range r.Clients() {
				res := nodeResult{URI: c.URI()}
				n, err := c.GetNode(ctx)
				fs = append(fs, Field{"uri", c.URI()})
				if err != nil {
					f := describe(err, g)
					res.Error = &f
					failed++
					fs = append(fs, Field{"error", f.Line})
				} else {
					res.Node = n
					fs = append(fs, Field{"nodeID", n.NodeID}, Field{"networkID", n.NetworkID}, Field{"chainID", n.ChainID},
						Field{"height", n.Height}, Field{"stateRoot", n.StateRoot})
				}
				results = append(results, res)
			}
			if err := g.Emit(results, fs); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("%w: %d of %d", errSomeNodesFailed, failed, len(results))
			}
			return nil
		},
	}
}

// DescribeLiveness is one validator's line in `schain membership`.
func DescribeLiveness(v api.ValidatorLiveness) string {
	role := "member"
	if !v.Member {
		role = "NOT a member"
	}
	hb := "no heartbeat yet"
	if v.LastHeartbeat != nil {
		hb = fmt.Sprintf("last heartbeat in round %d", *v.LastHeartbeat)
	}
	return fmt.Sprintf("%s weight %d: %s, %s", v.NodeID, v.Weight, role, hb)
}
