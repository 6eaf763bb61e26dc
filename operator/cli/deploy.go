package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/deploy"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/vm"
)

// defaultRecord is the deployment record's file unless --record names one.
const defaultRecord = "schain-deploy.json"

func newDeployCmd(g *Globals) *cobra.Command {
	var (
		nodes                     []string
		pchain, keyFile, genesis  string
		record, chainName         string
		pluginDir, chainConfigDir string
		weight                    uint64
		dryRun                    bool
		trackWait, serveWait      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "deploy --node URI... --key-file FILE [--genesis FILE] [--dry-run]",
		Short: "Create the S-Chain subnet and chain on a running avalanchego network (resumable; see docs/operating/deployment.md)",
		Long: `Create S-Chain on an avalanchego network that is already running: a
permissioned subnet owned by --key-file, every --node as its validator, and
the chain with the genesis. The key pays the fees from its P-chain balance.

Every node is checked first: the same network, its P-chain bootstrapped,
the plugin installed (info.getVMs lists VM ` + vm.ID.String() + `), a
validator of the primary network. Then every transaction is built and signed
and kept in the deployment record (--record): the subnet and chain IDs are
known before anything is issued. The subnet and the validators are issued;
the chain waits until every node tracks the subnet (the lines to add to each
node are printed: --track-subnets, and where its chain config goes), so the
first run usually stops there (exit 6): configure and restart the nodes, and
run the same command again. It resumes from the record, issuing the same
transactions, never a second subnet; once done, a run changes nothing.

--dry-run checks the nodes and prints the plan with its fees and IDs,
writing and issuing nothing. "schain deploy status" shows every validator
serving the chain and whether they agree on the block and state root.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := subnet.ReadKey(keyFile)
			if err != nil {
				return err
			}
			gen, err := genesisBytes(genesis)
			if err != nil {
				return err
			}
			d, err := deploy.New(deploy.Spec{
				Nodes: nodes, PChain: pchain, Key: key, KeyPath: keyPath(keyFile), Genesis: gen,
				ChainName: chainName, Weight: weight, VMID: vm.ID, RecordPath: record,
				TrackWait: trackWait, ServeWait: serveWait, PluginDir: pluginDir, ChainConfigDir: chainConfigDir,
				Progress: g.Notes(),
			}, deploy.Dial)
			if err != nil {
				return UsageError{err}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), max(g.Timeout, trackWait+serveWait+2*time.Minute))
			defer cancel()
			res, err := d.Run(ctx, dryRun)
			if res != nil && res.Record != nil {
				if perr := g.EmitText(res, func(w io.Writer) error { return writeDeploy(w, res, record) }); perr != nil {
					return perr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&nodes, "node", nil, "URI of a node that will validate the subnet (http://host:9650; repeated or comma-separated)")
	f.StringVar(&pchain, "pchain", "", "URI of the node the P-chain transactions go to (default: the first --node)")
	f.StringVar(&keyFile, "key-file", "", "file with the funded P-chain key that pays the fees and owns the subnet (PrivateKey-<cb58> or hex; mode 0600)")
	f.StringVar(&genesis, "genesis", "", "the chain's genesis JSON file (default: the record's when resuming, else every default of docs/operating/configuration.md, starting now)")
	f.StringVar(&record, "record", defaultRecord, "the deployment record: written on the first run, resumed by the next")
	f.StringVar(&chainName, "chain-name", deploy.DefaultChainName, "the chain's name in its CreateChainTx")
	f.Uint64Var(&weight, "weight", deploy.DefaultWeight, "each validator's weight on the subnet")
	f.BoolVar(&dryRun, "dry-run", false, "check the nodes and print the plan with its fees; write and issue nothing")
	f.DurationVar(&trackWait, "wait-tracking", 0, "wait this long for every node to track the subnet before creating the chain (0: look once and stop with the lines to add)")
	f.DurationVar(&serveWait, "wait-serving", 3*time.Minute, "once the chain is created, wait this long for every node to run it")
	f.StringVar(&pluginDir, "plugin-dir", "", "the nodes' plugin directory, for the lines printed (default ~/.avalanchego/plugins)")
	f.StringVar(&chainConfigDir, "chain-config-dir", "", "the nodes' chain config directory, for the lines printed (default ~/.avalanchego/configs/chains)")
	_ = cmd.MarkFlagRequired("node")
	_ = cmd.MarkFlagRequired("key-file")
	cmd.AddCommand(newDeployStatusCmd(g))
	return cmd
}

func newDeployStatusCmd(g *Globals) *cobra.Command {
	var record string
	cmd := &cobra.Command{
		Use:   "status [--record FILE]",
		Short: "Show every validator of a deployment serving the chain, and whether they agree on height and state root",
		Long: `Show every validator of the deployment record: whether the P-chain lists
it as a validator of the subnet, whether it runs the chain, its last
accepted height and state root, and its block at the highest height every
node accepted. Exit 0 when the deployment is complete, every validator
serves the chain and all hold the same block there; 5 otherwise.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rec, err := deploy.LoadRecord(record)
			if err != nil {
				return err
			}
			if rec == nil {
				return UsageError{fmt.Errorf("no deployment record at %s (give --record)", record)}
			}
			chain := func(uri string) (deploy.Chain, error) {
				return client.New(uri, rec.ChainID.String(), client.DefaultConfig())
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), max(g.Timeout, 30*time.Second))
			defer cancel()
			st, err := deploy.ReadStatus(ctx, rec, deploy.Dial, chain)
			if err != nil {
				return err
			}
			if err := g.EmitText(st, func(w io.Writer) error { return writeDeployStatus(w, st) }); err != nil {
				return err
			}
			if !st.OK() {
				return errDeployUnhealthy
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&record, "record", defaultRecord, "the deployment record")
	return cmd
}

// errDeployUnhealthy: a validator does not serve the chain or disagrees.
var errDeployUnhealthy = errors.New("deploy: not every validator serves the chain in agreement")

// genesisBytes reads the genesis file (none: the record's, or the default
// genesis of a chain starting now).
func genesisBytes(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, UsageError{fmt.Errorf("--genesis: %w", err)}
	}
	return b, nil
}

func writeDeploy(w io.Writer, res *deploy.Result, record string) error {
	rec := res.Record
	title := "deployment"
	if res.DryRun {
		title = "deployment plan (dry run: nothing written or issued)"
	}
	fs := []Field{
		{title, record}, {"network", rec.NetworkID}, {"subnetID", rec.SubnetID}, {"chainID", rec.ChainID},
		{"owner", rec.Owner + " (key file " + rec.OwnerKey + ")"},
	}
	for _, st := range rec.Steps {
		what := string(st.Kind)
		if st.NodeID != ids.EmptyNodeID {
			what += " " + st.NodeID.String()
		}
		line := fmt.Sprintf("%-12s %s  %s, fee %d nAVAX", st.State, st.TxID, what, st.FeeNAVAX)
		if st.Note != "" {
			line += " (" + st.Note + ")"
		}
		fs = append(fs, Field{"step", line})
	}
	fs = append(fs, Field{"fees left", fmt.Sprintf("%d nAVAX", rec.FeeNAVAX())})
	for _, c := range res.Config {
		state := "runs the chain"
		switch {
		case c.Serves:
		case c.Tracking != nil && *c.Tracking:
			state = "tracks the subnet"
		case c.Tracking != nil:
			state = "does not track the subnet yet"
		default:
			state = "tracking not reported"
		}
		fs = append(fs, Field{"node", fmt.Sprintf("%s %s: %s; needs %s and its chain config at %s", c.URI, c.NodeID, state, c.TrackSubnets, c.ChainConfig)})
	}
	for _, p := range res.Pending {
		fs = append(fs, Field{"to do", p})
	}
	return WriteFields(w, fs)
}

func writeDeployStatus(w io.Writer, st *deploy.Status) error {
	fs := []Field{{"subnetID", st.SubnetID}, {"chainID", st.ChainID}, {"complete", st.Complete}}
	for _, n := range st.Nodes {
		line := fmt.Sprintf("%s %s: validator %t, serves %t, height %d, state root %s, block at %d %s", n.URI, n.NodeID, n.Validator, n.Serves, n.Height, n.StateRoot, st.Height, n.Block)
		if n.Err != "" {
			line += " (" + n.Err + ")"
		}
		fs = append(fs, Field{"node", line})
	}
	verdict := "every validator serves the chain and holds the same block at height " + fmt.Sprint(st.Height)
	if !st.OK() {
		verdict = "NOT OK: " + strings.TrimPrefix(errDeployUnhealthy.Error(), "deploy: ")
	}
	return WriteFields(w, append(fs, Field{"status", verdict}))
}

// keyPath is the key file's absolute path, as the record keeps it.
func keyPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
