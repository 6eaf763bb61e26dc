package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

var errChunkSyntax = errors.New("--chunk wants range:id:size:hash")

func newAllocateCmd(g *Globals) *cobra.Command {
	var (
		args        api.AllocateArgs
		wait, final bool
	)
	cmd := &cobra.Command{
		Use:   "allocate --range R --count N [--floor F] [--wait | --final | --pooled]",
		Short: "Reserve count ids in a range at its owner",
		Long: `Reserve ids [base, base+count) in a range; base is max(counter, floor).
Base is known once the transaction is accepted: pass --wait to wait for it
(following re-pins), or run "schain receipt TXID --wait" later. --final
waits until a finality certificate covers it as well ("schain verify TXID"
checks it against the P-chain).

With --pooled the owner answers at once from ids it reserved in advance (an
accepted reservation, named by txID): no transaction per request, at most a
quarter of the genesis poolChunk ids, no --floor. Ids of a pool lost with its
node are skipped, never reissued.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if args.Count == 0 {
				return UsageError{errors.New("--count must be positive")}
			}
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				reply, err := r.Allocate(ctx, args)
				if err != nil {
					return err
				}
				if reply.Pooled {
					return g.Emit(reply, []Field{{"ids", fmt.Sprintf("%s [%d, %d)", args.Range, reply.Base, reply.Base+reply.Count)},
						{"reservation", reply.TxID}, {"owner", reply.Owner}})
				}
				reply.Receipt, err = waitFor(ctx, r, reply.TxID, wait, final)
				fs := []Field{{"txID", reply.TxID}, {"index", reply.Index}, {"pChainHeight", reply.PChainHeight}, {"owner", reply.Owner}}
				if reply.Receipt != nil {
					fs = append(fs, allocatedFields(reply, args.Range)...)
				}
				return errors.Join(err, g.Emit(reply, fs))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&args.Range, "range", "", "range (a bucket, or a band bucket/... of it)")
	f.Uint64Var(&args.Count, "count", 0, "number of ids to reserve")
	f.Uint64Var(&args.Floor, "floor", 0, "lowest acceptable base (cutover from the legacy allocator)")
	f.BoolVar(&wait, "wait", false, "wait until the transaction is decided")
	f.BoolVar(&final, "final", false, "wait until the transaction is decided and a finality certificate covers it")
	f.BoolVar(&args.Pooled, "pooled", false, "answer at once from the owner's committed id pool (takes neither --wait, --final nor --floor)")
	MustMarkRequired(cmd, "range", "count")
	cmd.MarkFlagsMutuallyExclusive("pooled", "wait")
	cmd.MarkFlagsMutuallyExclusive("pooled", "final")
	cmd.MarkFlagsMutuallyExclusive("pooled", "floor")
	cmd.MarkFlagsMutuallyExclusive("wait", "final")
	return cmd
}

// allocatedFields shows the receipt, leading with this request's ids when
// its entry can be told apart (the index names it unless a re-pin regrouped
// the entries).
func allocatedFields(reply *api.AllocateReply, rangeKey string) []Field {
	rc := reply.Receipt
	var fs []Field
	if e, ok := rc.Entry(reply.Index); ok && e.Range == rangeKey && rc.TxID == reply.TxID {
		fs = append(fs, Field{"base", e.Base}, Field{"count", e.Count})
	}
	return append(fs, waitedFields(reply.TxID, rc)...)
}

func newPutManifestCmd(g *Globals) *cobra.Command {
	var (
		args        api.PutManifestArgs
		contentHash string
		chunkSpecs  []string
		wait, final bool
		ifAbsent    bool
		ifVersion   uint64
		ifHash      string
	)
	cmd := &cobra.Command{
		Use:   "put-manifest --bucket B --key K --size S --content-hash H --chunk range:id:size:hash ... [--deleted] [--if-absent | --if-version V | --if-content-hash H] [--wait | --final]",
		Short: "Commit an object manifest at its bucket's owner",
		Long: `Commit an object manifest; every chunk id must already be allocated in its
range (the bucket or one of its bands) and belong to no other live object.
Hashes are CB58 or 64 hex digits. With a condition the write commits only if
the object is not live (--if-absent), or is live at that version or content
hash; otherwise it fails with precondition_failed and the current version.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if contentHash != "" {
				h, err := parseID(contentHash)
				if err != nil {
					return UsageError{fmt.Errorf("--content-hash: %w", err)}
				}
				args.ContentHash = h
			}
			for _, s := range chunkSpecs {
				c, err := parseChunk(s)
				if err != nil {
					return UsageError{err}
				}
				args.Chunks = append(args.Chunks, c)
			}
			switch {
			case ifAbsent:
				args.Condition = &api.Condition{Kind: api.IfAbsent}
			case ifVersion != 0:
				args.Condition = &api.Condition{Kind: api.IfVersion, Version: ifVersion}
			case ifHash != "":
				h, err := parseID(ifHash)
				if err != nil {
					return UsageError{fmt.Errorf("--if-content-hash: %w", err)}
				}
				args.Condition = &api.Condition{Kind: api.IfContentHash, ContentHash: &h}
			}
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				reply, err := r.PutManifest(ctx, args)
				if err != nil {
					return err
				}
				reply.Receipt, err = waitFor(ctx, r, reply.TxID, wait, final)
				if err == nil {
					err = client.EntryError(reply.Receipt, reply.Index)
				}
				fs := []Field{{"txID", reply.TxID}, {"index", reply.Index}, {"pChainHeight", reply.PChainHeight}, {"owner", reply.Owner}}
				if rc := reply.Receipt; rc != nil {
					if e, ok := rc.Entry(reply.Index); ok && e.Version != 0 {
						reply.Version = e.Version
						fs = append(fs, Field{"version", reply.Version})
					}
					fs = append(fs, waitedFields(reply.TxID, rc)...)
				}
				return errors.Join(err, g.Emit(reply, fs))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&args.Bucket, "bucket", "", "bucket (the manifest's range)")
	f.StringVar(&args.Key, "key", "", "object key")
	f.Uint64Var(&args.Size, "size", 0, "object size in bytes")
	f.StringVar(&contentHash, "content-hash", "", "object content hash")
	f.StringArrayVar(&chunkSpecs, "chunk", nil, "chunk as range:id:size:hash (repeatable, in order)")
	f.BoolVar(&args.Deleted, "deleted", false, "write a tombstone")
	f.BoolVar(&ifAbsent, "if-absent", false, "commit only if the object is not live (S3 If-None-Match: *)")
	f.Uint64Var(&ifVersion, "if-version", 0, "commit only if the object is live at this version")
	f.StringVar(&ifHash, "if-content-hash", "", "commit only if the object is live with this content hash")
	cmd.MarkFlagsMutuallyExclusive("if-absent", "if-version", "if-content-hash")
	f.BoolVar(&wait, "wait", false, "wait until the transaction is decided")
	f.BoolVar(&final, "final", false, "wait until the transaction is decided and a finality certificate covers it")
	MustMarkRequired(cmd, "bucket", "key")
	cmd.MarkFlagsOneRequired("content-hash", "deleted")
	cmd.MarkFlagsMutuallyExclusive("wait", "final")
	return cmd
}

// waitFor waits for a write's receipt as the flags ask: not at all, until
// decided (wait) or until final too (final).
func waitFor(ctx context.Context, r *client.Router, txID api.ID, wait, final bool) (*api.ReceiptReply, error) {
	switch {
	case final:
		return r.WaitFinal(ctx, txID)
	case wait:
		return r.WaitForReceipt(ctx, txID)
	}
	return nil, nil
}

// parseChunk reads range:id:size:hash from the right, so a range may itself
// contain colons.
func parseChunk(s string) (api.Chunk, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 4 {
		return api.Chunk{}, fmt.Errorf("%w, got %q", errChunkSyntax, s)
	}
	n := len(parts)
	rng := strings.Join(parts[:n-3], ":")
	id, err1 := strconv.ParseUint(parts[n-3], 10, 64)
	size, err2 := strconv.ParseUint(parts[n-2], 10, 64)
	hash, err3 := parseID(parts[n-1])
	if err := errors.Join(err1, err2, err3); err != nil || rng == "" {
		return api.Chunk{}, fmt.Errorf("%w, got %q: %v", errChunkSyntax, s, err)
	}
	return api.Chunk{Range: rng, ID: id, Size: size, Hash: hash}, nil
}
