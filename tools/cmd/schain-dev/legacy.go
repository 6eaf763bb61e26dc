package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

var errPeerSyntax = errors.New("--peers wants id=raftAddr=httpAddr")

func newLegacyCmd(g *cli.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "legacy",
		Short: "Run the legacy raft allocator the shadow comparison measures against",
	}
	cmd.AddCommand(newLegacyServeCmd(g))
	return cmd
}

func newLegacyServeCmd(g *cli.Globals) *cobra.Command {
	def := legacyraft.DefaultConfig()
	var (
		cfg   = def
		mode  string
		peers []string
	)
	cmd := &cobra.Command{
		Use:   "serve [--id ID] [--dir DIR] [--bind ADDR] [--http ADDR] [--peers id=raft=http,...] [--mode M]",
		Short: "Serve one legacy allocator node until SIGINT/SIGTERM",
		Long: `Serve one node of the legacy raft allocator (package tools/shadow/legacyraft):
raft on --bind (group g of --mode slots on port+g), its HTTP API on --http.
Every address must be on 127.0.0.1 or in 198.18.0.0/15 (the benchmarking
range: hosts made on this machine). Without --peers the node is a cluster of
one. Without --dir raft state lives in memory and a restart loses it.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Mode = legacyraft.Mode(mode)
			cfg.Peers = []legacyraft.Peer{{ID: cfg.ID, RaftAddr: cfg.Bind, HTTPAddr: cfg.HTTPBind}}
			if len(peers) > 0 {
				ps, err := parsePeers(peers)
				if err != nil {
					return cli.UsageError{Err: err}
				}
				cfg.Peers = ps
			}
			if err := cfg.Validate(); err != nil {
				return cli.UsageError{Err: err}
			}
			fmt.Fprintf(g.ErrOut, "legacy node %s: raft %s, http %s, mode %s, %d peer(s); stop with Ctrl-C\n",
				cfg.ID, cfg.Bind, cfg.HTTPBind, cfg.Mode, len(cfg.Peers))
			if err := legacyraft.Serve(cmd.Context(), cfg, legacyraft.Options{}); err != nil {
				return fmt.Errorf("legacy node %s: %w", cfg.ID, err)
			}
			fmt.Fprintf(g.ErrOut, "legacy node %s stopped\n", cfg.ID)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.ID, "id", def.ID, "raft server id (must appear in --peers)")
	f.StringVar(&cfg.Dir, "dir", def.Dir, "directory for raft logs and snapshots (empty: in memory)")
	f.StringVar(&cfg.Bind, "bind", def.Bind, "raft bind address of group 0")
	f.StringVar(&cfg.HTTPBind, "http", def.HTTPBind, "HTTP API address")
	f.StringSliceVar(&peers, "peers", nil, "all voters as id=raftAddr=httpAddr (comma-separated or repeated)")
	f.StringVar(&mode, "mode", string(def.Mode), "counter placement: seaweedfs, replicated or slots")
	f.IntVar(&cfg.Groups, "groups", def.Groups, "raft groups in --mode slots")
	f.DurationVar(&cfg.WarmUp, "warmup", def.WarmUp, "how long a new seaweedfs-mode leader answers unavailable")
	return cmd
}

func parsePeers(specs []string) ([]legacyraft.Peer, error) {
	out := make([]legacyraft.Peer, 0, len(specs))
	for _, s := range specs {
		parts := strings.Split(strings.TrimSpace(s), "=")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("%w, got %q", errPeerSyntax, s)
		}
		out = append(out, legacyraft.Peer{ID: parts[0], RaftAddr: parts[1], HTTPAddr: parts[2]})
	}
	return out, nil
}
