package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

func newManifestsCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifests",
		Short: "List a bucket's objects and released chunks",
	}
	cmd.AddCommand(newManifestsLsCmd(g), newManifestsReleasedCmd(g))
	return cmd
}

// listing is `schain manifests ls --json`: every page read, merged.
type listing struct {
	Manifests      []api.ManifestReply `json:"manifests"`
	CommonPrefixes []string            `json:"commonPrefixes,omitempty"`
	Truncated      bool                `json:"truncated"`
	Next           string              `json:"next,omitempty"`
}

func newManifestsLsCmd(g *Globals) *cobra.Command {
	var (
		args api.ListManifestsArgs
		all  bool
	)
	cmd := &cobra.Command{
		Use:   "ls BUCKET [--prefix P] [--delimiter /] [--start-after K] [--limit N] [--all]",
		Short: "List a bucket's live objects in key order",
		Long: `List a bucket's live objects (not deleted) in key order, from accepted state.
With --delimiter, keys that contain it after the prefix are shown once as
their common prefix ("PRE dir/"), as S3 lists a directory. One page of at
most --limit entries (1000 at most) unless --all, which follows the pages;
a truncated page names the key to continue after (--start-after).`,
		Args: ExactArgs(1, "BUCKET"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			args.Bucket = argv[0]
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				out, err := listAll(ctx, r, args, all)
				if err != nil {
					return err
				}
				return g.Emit(out, listingFields(out))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&args.Prefix, "prefix", "", "only keys that start with this")
	f.StringVar(&args.Delimiter, "delimiter", "", "roll keys up to common prefixes at this string (S3 semantics)")
	f.StringVar(&args.StartAfter, "start-after", "", "only keys after this one")
	f.IntVar(&args.Limit, "limit", 100, "entries per page (at most 1000)")
	f.BoolVar(&all, "all", false, "follow the pages to the end")
	return cmd
}

// listAll reads one page, or every page with all.
func listAll(ctx context.Context, r *client.Router, args api.ListManifestsArgs, all bool) (*listing, error) {
	out := &listing{Manifests: []api.ManifestReply{}}
	for {
		page, err := r.ListManifests(ctx, args)
		if err != nil {
			return nil, err
		}
		out.Manifests = append(out.Manifests, page.Manifests...)
		out.CommonPrefixes = append(out.CommonPrefixes, page.CommonPrefixes...)
		out.Truncated, out.Next = page.Truncated, page.Next
		if !all || !page.Truncated {
			return out, nil
		}
		args.StartAfter = page.Next
	}
}

func listingFields(l *listing) []Field {
	var fs []Field
	for _, p := range l.CommonPrefixes {
		fs = append(fs, Field{"PRE", p})
	}
	for _, m := range l.Manifests {
		fs = append(fs, Field{m.Manifest.Key, fmt.Sprintf("%d bytes, %d chunks, version %d (height %d)", m.Manifest.Size, len(m.Manifest.Chunks), m.Version, m.Height)})
	}
	if l.Truncated {
		fs = append(fs, Field{"truncated", "continue with --start-after " + l.Next})
	}
	return fs
}

func newManifestsReleasedCmd(g *Globals) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "released BUCKET [--limit N]",
		Short: "List a bucket's released chunks, waiting to be reclaimed",
		Long: `List the chunks a bucket's overwritten and deleted objects released, in the
order they were released, with the height that released each: what a blob
store may delete, then acknowledge (API reclaim).`,
		Args: ExactArgs(1, "BUCKET"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				page, err := r.ListReleased(ctx, api.ListReleasedArgs{Bucket: argv[0], Limit: limit})
				if err != nil {
					return err
				}
				var fs []Field
				for _, c := range page.Released {
					fs = append(fs, Field{fmt.Sprintf("%s#%d", c.Range, c.ID), fmt.Sprintf("%d bytes, released at height %d", c.Size, c.Height)})
				}
				if page.Truncated {
					fs = append(fs, Field{"truncated", "more follow"})
				}
				return g.Emit(page, fs)
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "entries (at most 1000)")
	return cmd
}
