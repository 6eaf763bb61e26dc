package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/shadow/plot"
)

// localToken is the local network's token if chain is its chain.
func localToken(chain string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := localnet.Open(ctx, filepath.Join(cli.DefaultBuildDir(), "network"), nil)
	if err != nil || n.ChainID.String() != chain {
		return ""
	}
	return n.Token
}

// localOwnerKey is the local network's owner key file if chain is its
// chain.
func localOwnerKey(chain string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := localnet.Open(ctx, filepath.Join(cli.DefaultBuildDir(), "network"), nil)
	if err != nil || n.ChainID.String() != chain {
		return ""
	}
	if _, err := n.OwnerKey(); err != nil {
		return ""
	}
	return n.OwnerKeyPath()
}

// localChain is the chain ID and chain URIs of the local network under
// buildDir.
func localChain(ctx context.Context, buildDir string) (string, []string, error) {
	n, err := localnet.Open(ctx, filepath.Join(buildDir, "network"), nil)
	if err != nil {
		return "", nil, err
	}
	return n.ChainID.String(), n.ChainURIsBase(), nil
}

// localPairsDirs are the local SeaweedFS cluster's pairs directories.
func localPairsDirs(o *cli.WeedOptions) ([]string, error) {
	c, err := cluster.Open(o.ClusterDir())
	if err != nil {
		return nil, err
	}
	return c.PairsDirs(), nil
}

// localCutover cuts the local SeaweedFS cluster over to S-Chain.
func localCutover(ctx context.Context, g *cli.Globals, o *cli.WeedOptions, margins cutover.Margins) error {
	c, err := cluster.Open(o.ClusterDir())
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("no --masters or --volume-servers and no local cluster: %w", err)}
	}
	if c.SChainConfig().Chain == "" {
		return cli.UsageError{Err: errors.New("the local cluster runs without S-Chain: start it with `schain-dev seaweedfs up --mode schain-shadow`")}
	}
	r, err := clusterRouter(g, c)
	if err != nil {
		return err
	}
	c.SetProgress(g.ErrOut)
	f, err := cutover.ToSChain(ctx, c, r.Fresh(), cutover.Options{Prefix: c.SChainConfig().Prefix, Margins: margins, Out: g.ErrOut})
	if err != nil {
		return err
	}
	return g.EmitLine(cli.WeedSwitch{Floors: f, Mode: string(cluster.ModeSChain)},
		fmt.Sprintf("cut over: file keys >= %d, volume ids >= %d come from S-Chain; masters in schain mode", f.FileKey, f.VolumeID))
}

// localRollback rolls the local SeaweedFS cluster back to the stock
// sequencer.
func localRollback(ctx context.Context, g *cli.Globals, o *cli.WeedOptions, band uint32, margins cutover.Margins) error {
	c, err := cluster.Open(o.ClusterDir())
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("no --chain and no local cluster: %w", err)}
	}
	r, err := clusterRouter(g, c)
	if err != nil {
		return err
	}
	c.SetProgress(g.ErrOut)
	f, err := cutover.ToStock(ctx, c, r.Fresh(), cutover.Options{Prefix: c.SChainConfig().Prefix, Band: band, Margins: margins, Out: g.ErrOut})
	if err != nil {
		return err
	}
	return g.EmitLine(cli.WeedSwitch{Floors: f, Mode: string(cluster.ModeRaft)},
		fmt.Sprintf("rolled back: stock sequencer from file key %d, new volume ids from %d", f.FileKey, f.VolumeID))
}

// savePlots writes a shadow report's plots.
func savePlots(dir string, rep shadow.Report) error {
	_, err := plot.SaveAll(dir, rep)
	return err
}

// devHooks is what schain-dev adds to the operator's command line.
func devHooks() cli.Dev {
	return cli.Dev{
		Name:     "schain-dev",
		Commands: []func(*cli.Globals) *cobra.Command{newNetworkCmd, newDemoCmd, newBenchCmd, newLegacyCmd},
		WeedCommands: []func(*cli.Globals, *cli.WeedOptions) *cobra.Command{
			newWeedUpCmd, newWeedDownCmd, newWeedStatusCmd, newWeedDemoCmd, newWeedBenchCmd, newWeedStoresBenchCmd,
		},
		LocalToken:     localToken,
		LocalOwnerKey:  localOwnerKey,
		LocalChain:     localChain,
		OpenLegacy:     openLegacy,
		ShowProgress:   showProgress,
		SavePlots:      savePlots,
		LocalPairsDirs: localPairsDirs,
		LocalCutover:   localCutover,
		LocalRollback:  localRollback,
	}
}
