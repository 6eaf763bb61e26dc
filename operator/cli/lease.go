package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

func newLeaseCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "Acquire, renew, release or show a range's lease (one holder at a time, with a fencing token)",
		Long: `A lease gives one holder a range for a time to live, counted from the time
of the block that grants it; the range's owner signs each operation and the
block decides. A grant carries a fencing token that only grows for the
range: a resource that refuses tokens below the highest it has seen refuses
a holder that lost its lease (say, paused past its TTL) and came back.

A holder counts its lease from before its request, TTL long, less the
chain's clock skew, and renews well within it. The commands wait until the
block is accepted. A held lease exits 5 (retry later), a lost grant 3.`,
	}
	cmd.AddCommand(
		newLeaseOpCmd(g, "acquire", "Take a range's lease if nobody holds it",
			func(ctx context.Context, r *client.Router, a api.LeaseArgs) (*api.LeaseReply, error) {
				return r.AcquireLease(ctx, a)
			}),
		newLeaseOpCmd(g, "renew", "Extend a grant: its expiry moves to the block's time + TTL",
			func(ctx context.Context, r *client.Router, a api.LeaseArgs) (*api.LeaseReply, error) {
				return r.RenewLease(ctx, a)
			}),
		newLeaseOpCmd(g, "release", "End a grant",
			func(ctx context.Context, r *client.Router, a api.LeaseArgs) (*api.LeaseReply, error) {
				return r.ReleaseLease(ctx, a)
			}),
		newLeaseShowCmd(g),
	)
	return cmd
}

func newLeaseOpCmd(g *Globals, op, short string, do func(context.Context, *client.Router, api.LeaseArgs) (*api.LeaseReply, error)) *cobra.Command {
	var (
		args api.LeaseArgs
		ttl  time.Duration
	)
	use := op + " RANGE --holder H"
	switch op {
	case "acquire":
		use += " --ttl D"
	case "renew":
		use += " --token T --ttl D"
	case "release":
		use += " --token T"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  ExactArgs(1, "RANGE"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			args.Range, args.TTLMs = argv[0], uint64(ttl.Milliseconds())
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				reply, err := do(ctx, r, args)
				if err != nil {
					return err
				}
				fs := []Field{{"range", reply.Range}, {"outcome", reply.Outcome}}
				if reply.Holder != "" {
					fs = append(fs, Field{"holder", reply.Holder}, Field{"token", reply.Token}, Field{"expires", expiry(reply.ExpiresMs)})
				}
				return g.Emit(reply, append(fs, Field{"txID", reply.TxID}, Field{"height", reply.Height}))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&args.Holder, "holder", "", "the holder's name (unique per process: a name is not a grant)")
	required := []string{"holder"}
	if op != "acquire" {
		f.Uint64Var(&args.Token, "token", 0, "the fencing token of the grant")
		required = append(required, "token")
	}
	if op != "release" {
		f.DurationVar(&ttl, "ttl", 0, "time to live from the block's time (at most 1h)")
		required = append(required, "ttl")
	}
	MustMarkRequired(cmd, required...)
	return cmd
}

func newLeaseShowCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show RANGE",
		Short: "Show a range's lease in accepted state",
		Args:  ExactArgs(1, "RANGE"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				l, err := r.GetLease(ctx, argv[0])
				if err != nil {
					return err
				}
				fs := []Field{{"range", l.Range}, {"held", l.Held}}
				if l.Holder != "" {
					fs = append(fs, Field{"holder", l.Holder}, Field{"token", l.Token}, Field{"expires", expiry(l.ExpiresMs)})
				}
				return g.Emit(l, append(fs, Field{"fence", l.Fence}, Field{"at", expiry(l.AtMs)}, Field{"height", l.AcceptedHeight}))
			})
		},
	}
}

// expiry shows block-time milliseconds as a UTC time.
func expiry(ms uint64) string {
	return time.UnixMilli(int64(ms)).UTC().Format("2006-01-02T15:04:05.000Z")
}
