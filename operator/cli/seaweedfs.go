package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/operator/pairs"
	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/seaweedfs/schainseq"
)

// WeedOptions are the flags every seaweedfs subcommand shares.
type WeedOptions struct {
	BuildDir, Dir, Prefix string
	// ProfileDir: the benches' S-Chain networks write CPU profiles there.
	ProfileDir string
	// PipelineIntervalMs: the benches' S-Chain networks' block pacing (0:
	// the chain config's default).
	PipelineIntervalMs uint64
	// Validators: the benches' S-Chain networks' size (0: the local
	// network's).
	Validators int
	// Genesis: the benches' S-Chain genesis (nil: the local network's).
	Genesis []byte
}

// ClusterDir is the local cluster's directory (schain-dev).
func (o *WeedOptions) ClusterDir() string {
	if o.Dir != "" {
		return o.Dir
	}
	return filepath.Join(o.BuildDir, "seaweedfs")
}

func newSeaweedFSCmd(g *Globals) *cobra.Command {
	o := &WeedOptions{}
	cmd := &cobra.Command{
		Use:   "seaweedfs",
		Short: "SeaweedFS on S-Chain: a cluster's shadow, cutover and rollback (schain-dev: a local cluster)",
		Long: `SeaweedFS on S-Chain. build/weed (make weed) is SeaweedFS with the S-Chain
patch: master.toml [master.sequencer] type "schain-shadow" mirrors every
allocation to S-Chain, type "schain" takes file keys and volume ids from
S-Chain. These commands move a cluster between the modes; schain-dev also
runs a local cluster (3 masters with hashicorp raft and a volume server on
127.0.0.1):

  shadow    compare the shadow's recorded pairs: report, cutover gate
  cutover   floors above every legacy id on S-Chain, masters to schain mode
  rollback  floors above every S-Chain id, masters back to stock (raft)
  up        (schain-dev) start the local cluster (and the local S-Chain network if needed)
  demo      (schain-dev) upload files, read them back, say where each id came from
  status    (schain-dev) processes, leader, mode, recorded floors
  down      (schain-dev) stop the local cluster (and the network up started)

On your own cluster, cutover and rollback take --masters or --volume-servers
and print the master.toml to install instead of restarting anything (see the
README, "SeaweedFS on S-Chain").`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.BuildDir, "build-dir", DefaultBuildDir(), "directory with weed, avalanchego, plugins/ and the local network")
	pf.StringVar(&o.Dir, "dir", "", "the local cluster's directory (default <build-dir>/seaweedfs)")
	pf.StringVar(&o.Prefix, "prefix", "seaweedfs", "the cluster's S-Chain range prefix ([master.sequencer] schain_prefix)")
	cmd.AddCommand(newWeedShadowCmd(g, o), newWeedCutoverCmd(g, o), newWeedRollbackCmd(g, o))
	for _, c := range dev.WeedCommands {
		cmd.AddCommand(c(g, o))
	}
	return cmd
}

func newWeedShadowCmd(g *Globals, o *WeedOptions) *cobra.Command {
	var (
		pairDirs           []string
		out                string
		gateRequests       uint64
		gateDuration, wait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "shadow",
		Short: "Compare the pairs recorded by schain-shadow masters: report, plots, cutover gate",
		Long: `Read the pairs that masters of type schain-shadow record (each master's
<mdir>/schain-shadow/pairs.jsonl: every stock allocation and S-Chain's answer to
the same request), merge the masters' files by time, and run them through the
shadow comparator: agreement, S-Chain ids unique and monotonic per range,
legacy reissues across leaders, the cutover gate. Writes report.json,
summary.txt (and, with schain-dev, latency-cdf.png and agreement-window.png)
to --out; exits 0 only
when the gate is READY (6 when not). --wait re-reads until READY or the wait
ends, for a shadow that is still collecting.

Mirrors dropped by a full queue are not compared; they are counted in the
summary. Without --pairs, the local cluster's masters are read.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dirs := pairDirs
			if len(dirs) == 0 {
				if dev.LocalPairsDirs == nil {
					return UsageError{errors.New("no --pairs: give the masters' pairs directories (the local cluster is schain-dev's)")}
				}
				d, err := dev.LocalPairsDirs(o)
				if err != nil {
					return UsageError{fmt.Errorf("no --pairs and no local cluster: %w", err)}
				}
				dirs = d
			}
			cfg := pairs.ComparatorConfig(shadow.DefaultConfig(), o.Prefix)
			cfg.Gate.MinRequests, cfg.Gate.MinDuration = gateRequests, gateDuration
			deadline := time.Now().Add(wait)
			for {
				set, err := pairs.Load(dirs...)
				if err != nil && time.Now().After(deadline) {
					return err
				}
				if err == nil {
					comp, err := set.Compare(cfg)
					if err != nil {
						return UsageError{err}
					}
					rep := comp.Report()
					if rep.Decision.Ready || time.Now().After(deadline) {
						return finishWeedShadow(g, out, set, comp, rep)
					}
					fmt.Fprintf(g.ErrOut, "shadow: %d pairs, clean window %d requests over %v, not ready yet...\n",
						rep.Requests, rep.Decision.WindowRequests, rep.Decision.WindowDurationNS.Round(time.Second))
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(2 * time.Second):
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&pairDirs, "pairs", nil, "pairs directories (each master's <mdir>/schain-shadow), comma-separated")
	f.StringVar(&out, "out", filepath.Join(DefaultBuildDir(), "seaweedfs-shadow"), "directory for the report, summary and plots")
	f.Uint64Var(&gateRequests, "gate-requests", 1000, "clean pairs the cutover window needs")
	f.DurationVar(&gateDuration, "gate-duration", time.Minute, "clean time the cutover window needs")
	f.DurationVar(&wait, "wait", 0, "re-read the pairs until the gate is READY or this long has passed")
	return cmd
}

func finishWeedShadow(g *Globals, out string, set *pairs.Set, comp *shadow.Comparator, rep shadow.Report) error {
	floors := comp.Floors(cutover.DefaultMargins().FileKey)
	if err := WriteShadowOutputs(out, rep, floors); err != nil {
		return err
	}
	totals := set.Totals()
	key, vol := set.LegacyMax()
	extra := struct {
		Mirror       schainseq.ShadowState `json:"mirror"`
		LegacyMaxKey uint64                `json:"legacy_max_key"`
		LegacyMaxVol uint32                `json:"legacy_max_volume_id"`
		Files        []string              `json:"files"`
	}{totals, key, vol, set.Files}
	b, err := json.MarshalIndent(extra, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "seaweedfs.json"), b, 0o644); err != nil {
		return err
	}
	res := weedShadowResult{
		ShadowResult: ShadowResult{Report: rep, Floors: floors, Outputs: ShadowOutputs(out, append([]string{"report.json", "summary.txt", "seaweedfs.json"}, plotFiles()...)...)},
		Mirror:       totals, LegacyMaxKey: key, LegacyMaxVol: vol,
	}
	err = g.EmitText(res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%smirrors: %d offered, %d dropped (queue full), %d answered, %d failed or missing; legacy max key %d, max volume id %d\noutputs:  %s/{%s}\n",
			ShadowSummary(rep, floors), totals.Offered, totals.Dropped, totals.Mirrored, totals.Failed, key, vol, out, strings.Join(append([]string{"report.json", "summary.txt", "seaweedfs.json"}, plotFiles()...), ","))
		return err
	})
	if err == nil && !rep.Decision.Ready {
		return ErrGateClosed
	}
	return err
}

func newWeedCutoverCmd(g *Globals, o *WeedOptions) *cobra.Command {
	var (
		masters, volumeServers, pairDirs []string
		report                           string
		keyMargin, volumeMargin          uint64
		dryRun                           bool
	)
	cmd := &cobra.Command{
		Use:   "cutover",
		Short: "Record floors above every legacy id on S-Chain and move the masters to schain mode",
		Long: `Record on S-Chain the floors of a cutover: every S-Chain file key above every
file key the legacy (stock) sequencer issued, every S-Chain volume id above
every legacy volume id. The bounds come from the cluster's own state (each
volume server's highest key per volume, the masters' max volume id) and the
shadow's pairs (the highest key the stock sequencer handed out, written or
not), plus the margins. Floors only go up.

The local cluster (no --masters, --volume-servers): the masters are stopped,
the bounds read, the floors recorded, and the masters started in schain mode.

Your own cluster: stop the masters (so that nothing more is issued), run
this with --volume-servers (and --pairs, copied from the masters' -mdir, or
--report, the output of "schain seaweedfs shadow"), then install the printed
[master.sequencer] table and start the masters. With the
masters still running, --masters reads their state; keep the margin above
what they may issue until they stop.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			margins := cutover.Margins{FileKey: keyMargin, VolumeID: volumeMargin}
			if len(masters) == 0 && len(volumeServers) == 0 && report == "" && len(pairDirs) == 0 {
				if dev.LocalCutover == nil {
					return UsageError{errors.New("no --masters, --volume-servers, --report or --pairs: say where your cluster's legacy ids are (the local cluster is schain-dev's)")}
				}
				return dev.LocalCutover(ctx, g, o, margins)
			}
			var b cutover.Bounds
			if len(masters) > 0 {
				mb, err := cutover.FromCluster(ctx, masters)
				if err != nil {
					return err
				}
				b.Raise(mb)
			}
			if len(volumeServers) > 0 {
				vb, err := cutover.FromVolumeServers(ctx, volumeServers)
				if err != nil {
					return err
				}
				b.Raise(vb)
			}
			if report != "" {
				rb, err := cutover.FromShadowReport(report)
				if err != nil {
					return err
				}
				b.Raise(rb)
			}
			if len(pairDirs) > 0 {
				set, err := pairs.Load(pairDirs...)
				if err != nil {
					return err
				}
				key, vol := set.LegacyMax()
				b.Raise(cutover.Bounds{MaxFileKey: key, MaxVolumeID: uint64(vol), Sources: []string{fmt.Sprintf("pairs: max key %d, max volume id %d", key, vol)}})
			}
			f := cutover.Plan(b, margins)
			fmt.Fprintf(g.ErrOut, "legacy bounds: file key %d, volume id %d, from:\n  %s\n", b.MaxFileKey, b.MaxVolumeID, strings.Join(b.Sources, "\n  "))
			if dryRun {
				return g.EmitLine(WeedSwitch{Floors: f, Bounds: &b, DryRun: true},
					fmt.Sprintf("would record: file keys >= %d, volume ids >= %d (dry run)", f.FileKey, f.VolumeID))
			}
			r, err := g.Router()
			if err != nil {
				return err
			}
			ctx, cancel := g.APIContext(cmd)
			defer cancel()
			got, err := cutover.Record(ctx, r.Fresh(), o.Prefix, f)
			if err != nil {
				return err
			}
			toml := cutover.MasterToml(schainseq.TypeSChain, cutover.SChain{URIs: g.RPC, Chain: g.Chain, TokenFile: "<file holding the write token>", Prefix: o.Prefix}, nil)
			return g.EmitText(WeedSwitch{Floors: got, Bounds: &b, Mode: schainseq.TypeSChain, MasterToml: toml}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "recorded on S-Chain: file keys >= %d, volume ids >= %d\nnow give every master this master.toml and start them:\n\n%s",
					got.FileKey, got.VolumeID, toml)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&masters, "masters", nil, "your cluster's masters (host:port): read their state")
	f.StringSliceVar(&volumeServers, "volume-servers", nil, "your cluster's volume servers (host:port): read their keys (masters stopped)")
	f.StringSliceVar(&pairDirs, "pairs", nil, "pairs directories of the shadow (each master's <mdir>/schain-shadow)")
	f.StringVar(&report, "report", "", "output directory of `schain seaweedfs shadow` (its seaweedfs.json)")
	f.Uint64Var(&keyMargin, "margin", cutover.DefaultMargins().FileKey, "file keys left between the legacy bound and the S-Chain floor")
	f.Uint64Var(&volumeMargin, "volume-margin", cutover.DefaultMargins().VolumeID, "volume ids left between the legacy bound and the S-Chain floor")
	f.BoolVar(&dryRun, "dry-run", false, "print the floors, record nothing")
	return cmd
}

func newWeedRollbackCmd(g *Globals, o *WeedOptions) *cobra.Command {
	var (
		band                    uint32
		keyMargin, volumeMargin uint64
	)
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Move the masters back to the stock sequencer, above every id S-Chain gave the cluster",
		Long: `Roll back from S-Chain to the stock sequencer (raft) without reissuing an S-Chain
id: read every id S-Chain reserved for the cluster (each volume's key range
and the volume range, reservations not yet handed out included) and start
the stock sequencer above them, with [master.sequencer] file_key_floor and
volume_id_floor (the patched master raises its sequencer with SetMax and
starts new volume ids there).

The local cluster: its masters are stopped and started in raft mode with the
floors. Your own cluster (--rpc/--chain given): stop the masters, run this,
install the printed table, start them.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			margins := cutover.Margins{FileKey: keyMargin, VolumeID: volumeMargin}
			if g.Chain == "" {
				if dev.LocalRollback == nil {
					return UsageError{fmt.Errorf("--chain is required (or set %s; the local cluster is schain-dev's)", ChainEnv)}
				}
				return dev.LocalRollback(ctx, g, o, band, margins)
			}
			r, err := g.Router()
			if err != nil {
				return err
			}
			b, err := cutover.SChainBounds(ctx, r.Fresh(), o.Prefix, band, func(done, total int) {
				fmt.Fprintf(g.ErrOut, "  read %d of %d key ranges\n", done, total)
			})
			if err != nil {
				return err
			}
			f := cutover.Plan(b, margins)
			toml := cutover.MasterToml(cutover.SequencerStock, cutover.SChain{}, cutover.RollbackSequencer(f))
			return g.EmitText(WeedSwitch{Floors: f, Bounds: &b, Mode: cutover.SequencerStock, MasterToml: toml}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "S-Chain bounds: file key %d, volume id %d\ngive every master this master.toml and start them:\n\n%s",
					b.MaxFileKey, b.MaxVolumeID, toml)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.Uint32Var(&band, "volume-band", 1, "volumes per key range ([master.sequencer] schain_volume_band)")
	f.Uint64Var(&keyMargin, "margin", 0, "file keys left above the S-Chain bound")
	f.Uint64Var(&volumeMargin, "volume-margin", 0, "volume ids left above the S-Chain bound")
	return cmd
}

// weedShadowResult is seaweedfs shadow's result: the comparison and what
// seaweedfs.json holds.
type weedShadowResult struct {
	ShadowResult
	Mirror       schainseq.ShadowState `json:"mirror"`
	LegacyMaxKey uint64                `json:"legacy_max_key"`
	LegacyMaxVol uint32                `json:"legacy_max_volume_id"`
}

// WeedSwitch is the result of cutover and rollback: the floors recorded
// (or, with DryRun, planned), the bounds they are above, the mode the
// masters run in, and the master.toml to install on your own cluster.
type WeedSwitch struct {
	Floors     cutover.Floors  `json:"floors"`
	Bounds     *cutover.Bounds `json:"bounds,omitempty"`
	DryRun     bool            `json:"dryRun,omitempty"`
	Mode       string          `json:"mode,omitempty"`
	MasterToml string          `json:"masterToml,omitempty"`
}
