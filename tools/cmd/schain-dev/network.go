package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tests/framework/localnet"
)

func newNetworkCmd(g *cli.Globals) *cobra.Command {
	var buildDir string
	cmd := &cobra.Command{
		Use:   "network",
		Short: "Run a local S-Chain network (avalanchego nodes on 127.0.0.1)",
	}
	cmd.PersistentFlags().StringVar(&buildDir, "build-dir", cli.DefaultBuildDir(), "directory with avalanchego, plugins/ and network data ($"+cli.BuildDirEnv+" sets the default)")

	var nodes int
	var replace bool
	var profileDir string
	start := &cobra.Command{
		Use:   "start",
		Short: "Start a network of validators with an S-Chain subnet and wait until the chain answers",
		Long: `Start a network of validators with an S-Chain subnet and wait until the chain
answers. If a network is already running and healthy it is reused; --replace
stops it and starts a new one.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Checked before a running network is looked at: a bad
			// --nodes must not stop the network it would replace.
			if nodes < 1 || nodes > localnet.MaxNodes {
				return cli.UsageError{Err: fmt.Errorf("%w: --nodes %d (hint: 1 to %d; 4 keep finalizing with one down)", localnet.ErrNodeCount, nodes, localnet.MaxNodes)}
			}
			ctx := cmd.Context()
			root := filepath.Join(buildDir, "network")
			if n, err := localnet.Open(ctx, root, nil); err == nil {
				if !replace && chainAnswers(ctx, n) {
					g.Note("reusing the running network %s\n", n.Dir)
					return printNetwork(g, n)
				}
				g.Note("stopping the previous network %s\n", n.Dir)
				if err := localnet.StopAll(ctx, root, nil); err != nil {
					fmt.Fprintf(g.ErrOut, "warning: stopping the previous network: %v\n", err)
				}
			}
			cfg := localnet.DefaultConfig(buildDir)
			cfg.Nodes = nodes
			cfg.ProfileDir = profileDir
			cfg.Progress = g.ErrOut
			began := time.Now()
			n, err := localnet.Start(ctx, cfg)
			if err != nil {
				return err
			}
			g.Note("network up in %s; waiting for the chain to open its first membership...\n", time.Since(began).Round(time.Second))
			if err := waitChainReady(ctx, g, n, 3*time.Minute); err != nil {
				return err
			}
			g.Note("chain ready %s after start\n", time.Since(began).Round(time.Second))
			return printNetwork(g, n)
		},
	}
	start.Flags().IntVar(&nodes, "nodes", localnet.DefaultNodes, "number of validators (1 to 16; 4 keep finalizing with one down; 1 is a one-validator subnet with sybil protection on)")
	start.Flags().BoolVar(&replace, "replace", false, "stop a running network and start a new one")
	start.Flags().StringVar(&profileDir, "profile-dir", "", "write CPU profiles of every node (<dir>/<nodeID>/cpu.profile.N, every 10 s) and its plugin (<dir>/<nodeID>.N.pprof) there")

	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the local network and every node process",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := localnet.StopAll(cmd.Context(), filepath.Join(buildDir, "network"), nil)
			switch {
			case errors.Is(err, localnet.ErrNoNetwork):
				return g.EmitLine(stopped{Stopped: false, Reason: "no local network is running"}, "no local network is running")
			case err != nil:
				return err
			}
			return g.EmitLine(stopped{Stopped: true}, "network stopped")
		},
	}

	status := &cobra.Command{
		Use:   "status",
		Short: "Show the local network's endpoints and whether each node answers",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := localnet.Open(cmd.Context(), filepath.Join(buildDir, "network"), nil)
			if err != nil {
				return err
			}
			view, fs := networkView(n)
			var lines strings.Builder
			for _, nd := range n.Nodes {
				c, err := nodeClient(n, nd)
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
				info, err := c.GetNode(ctx)
				cancel()
				st := nodeStatus{NodeID: nd.NodeID.String(), Up: err == nil}
				if err != nil {
					st.Error = err.Error()
					fmt.Fprintf(&lines, "  %s  down (%v)\n", nd.NodeID, err)
				} else {
					st.Height, st.StateRoot = info.Height, info.StateRoot.String()
					fmt.Fprintf(&lines, "  %s  up, height %d, state root %s\n", nd.NodeID, info.Height, info.StateRoot)
				}
				view.Status = append(view.Status, st)
			}
			return g.EmitText(view, func(w io.Writer) error {
				if err := cli.WriteFields(w, fs); err != nil {
					return err
				}
				_, err := io.WriteString(w, lines.String())
				return err
			})
		},
	}
	cmd.AddCommand(start, stop, status)
	return cmd
}

// chainAnswers reports whether every node's S-Chain endpoint answers.
func chainAnswers(ctx context.Context, n *localnet.Network) bool {
	for _, nd := range n.Nodes {
		c, err := nodeClient(n, nd)
		if err != nil {
			return false
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = c.GetNode(cctx)
		cancel()
		if err != nil {
			return false
		}
	}
	return true
}

// waitChainReady polls every node until it answers getMembership (the chain has
// opened its first membership), printing what it waits for.
func waitChainReady(ctx context.Context, g *cli.Globals, n *localnet.Network, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	began := time.Now()
	last := ""
	for {
		var waiting []string
		for _, nd := range n.Nodes {
			c, err := nodeClient(n, nd)
			if err != nil {
				return err
			}
			cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
			_, err = c.GetMembership(cctx)
			ccancel()
			if err != nil {
				waiting = append(waiting, fmt.Sprintf("%s (%s)", short(nd.NodeID.String()), errName(err)))
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		msg := "waiting for " + strings.Join(waiting, ", ")
		if msg != last || time.Since(began)%(10*time.Second) < 500*time.Millisecond {
			fmt.Fprintf(g.ErrOut, "  %s [%s]\n", msg, time.Since(began).Round(time.Second))
			last = msg
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chain not ready after %s: %s (node logs: %s/<nodeID>/logs)", limit, msg, n.Dir)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func short(s string) string {
	if len(s) > 14 {
		return s[:14] + "…"
	}
	return s
}

// stopped is the result of a command that stops something local.
type stopped struct {
	Stopped bool   `json:"stopped"`
	Reason  string `json:"reason,omitempty"`
}

// networkOut is the local network as network start and status print it.
type networkOut struct {
	Dir       string          `json:"dir"`
	ChainID   string          `json:"chainID"`
	SubnetID  string          `json:"subnetID"`
	RPC       []string        `json:"rpc"`
	Nodes     []localnet.Node `json:"nodes"`
	TokenFile string          `json:"tokenFile"`
	OwnerKey  string          `json:"ownerKeyFile"`
	// Status: with network status, whether each node's chain answers.
	Status []nodeStatus `json:"status,omitempty"`
}

// nodeStatus is one node in network status.
type nodeStatus struct {
	NodeID    string `json:"nodeID"`
	Up        bool   `json:"up"`
	Height    uint64 `json:"height,omitempty"`
	StateRoot string `json:"stateRoot,omitempty"`
	Error     string `json:"error,omitempty"`
}

func printNetwork(g *cli.Globals, n *localnet.Network) error {
	o, fs := networkView(n)
	return g.Emit(o, fs)
}

// networkView is the network's result and its readable fields.
func networkView(n *localnet.Network) (networkOut, []cli.Field) {
	var uris []string
	for _, nd := range n.Nodes {
		uris = append(uris, nd.URI)
	}
	o := networkOut{Dir: n.Dir, ChainID: n.ChainID.String(), SubnetID: n.SubnetID.String(), RPC: uris, Nodes: n.Nodes, TokenFile: n.TokenPath(), OwnerKey: n.OwnerKeyPath()}
	fs := []cli.Field{{Key: "network", Value: n.Dir}, {Key: "chainID", Value: n.ChainID}, {Key: "subnetID", Value: n.SubnetID}}
	for i, nd := range n.Nodes {
		fs = append(fs, cli.Field{Key: fmt.Sprintf("node%d", i+1), Value: fmt.Sprintf("%s %s", nd.NodeID, n.ChainURI(nd))})
	}
	fs = append(fs,
		cli.Field{Key: "write token", Value: n.TokenPath() + " (schain-dev uses it for this chain; schain and others: export " + cli.TokenEnv + "=$(cat " + n.TokenPath() + "))"},
		cli.Field{Key: "subnet owner", Value: ownerKeyLine(n)},
		cli.Field{Key: "use it", Value: fmt.Sprintf("export %s=%s; schain --rpc %s owner <range>", cli.ChainEnv, n.ChainID, strings.Join(uris, ","))},
		cli.Field{Key: "stop it", Value: "make stop (or schain-dev network stop)"})
	return o, fs
}

// errName is a short label for an error while waiting.
func errName(err error) string {
	if e, ok := client.AsError(err); ok {
		return e.Name()
	}
	return "unreachable"
}

// nodeClient talks to one node of the local network (reads only: no token).
func nodeClient(n *localnet.Network, nd localnet.Node) (*client.Client, error) {
	return client.New(nd.URI, n.ChainID.String(), client.DefaultConfig())
}

// ownerKeyLine says where the subnet owner's key is (written on first
// use), for `schain validators`.
func ownerKeyLine(n *localnet.Network) string {
	if _, err := n.OwnerKey(); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return n.OwnerKeyPath() + " (schain-dev validators remove|add|watch use it for this chain; schain: --key-file)"
}
