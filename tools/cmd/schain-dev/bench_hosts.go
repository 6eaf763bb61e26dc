package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/tests/framework/avanet"
	"github.com/s-chain/schain/tests/framework/hosts"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/vm"
	vmconfig "github.com/s-chain/schain/vm/config"
)

// hostsNetNumber names the bench's hosts (198.18.30.0/24), apart from the
// e2e tests' (29).
const hostsNetNumber = 30

var errHostsLiveness = errors.New("--hosts measures the failover of the main network only (hint: --schain-rounds 5s)")

// hostedNetwork is S-Chain deployed on hosts, as the bench drives it.
type hostedNetwork struct {
	an    *avanet.Network
	chain ids.ID
	token string
}

func (h hostedNetwork) ChainID() ids.ID { return h.chain }
func (h hostedNetwork) Token() string   { return h.token }

func (h hostedNetwork) Nodes() []benchmark.SChainNode {
	out := make([]benchmark.SChainNode, len(h.an.Nodes))
	for i, nd := range h.an.Nodes {
		out[i] = benchmark.SChainNode{NodeID: nd.NodeID, URI: nd.URI, PID: nd.PID()}
	}
	return out
}

func (h hostedNetwork) KillNode(ctx context.Context, id ids.NodeID) error {
	for _, nd := range h.an.Nodes {
		if nd.NodeID == id {
			return nd.Kill(ctx)
		}
	}
	return fmt.Errorf("no node %s", id)
}

// startHostsTargets starts the bench's systems with every node on a host
// of its own (network namespaces, package tests/framework/hosts): the S-Chain
// validators as a plain avalanchego network with S-Chain deployed on it
// (schain deploy's two runs, the nodes configured between them), and each
// legacy mode's three processes; every host's link, and the machine's (the
// clients'), delayed by --host-delay each way.
func startHostsTargets(ctx context.Context, o benchOptions, progress io.Writer) ([]benchmark.Target, func(), error) {
	nothing := func() {}
	if err := hosts.Available(); err != nil {
		return nil, nothing, err
	}
	if err := hosts.EnsureTools(); err != nil {
		return nil, nothing, err
	}
	if err := hosts.Sweep(); err != nil {
		return nil, nothing, err
	}
	if err := os.RemoveAll(filepath.Join(o.out, "hosts")); err != nil {
		return nil, nothing, err
	}
	n := 0
	if o.schain {
		n = o.schainNodes
	}
	net, err := hosts.New(ctx, hosts.Config{Number: hostsNetNumber, Hosts: n + 3*len(o.legacyModes), Seed: 29})
	if err != nil {
		return nil, nothing, err
	}
	var stops []func(context.Context) error
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), benchStopTimeout)
		defer cancel()
		for i := len(stops) - 1; i >= 0; i-- {
			if err := stops[i](sctx); err != nil {
				fmt.Fprintf(progress, "bench: stopping: %v\n", err)
			}
		}
		if err := net.Close(); err != nil {
			fmt.Fprintf(progress, "bench: removing the hosts: %v\n", err)
		}
		fmt.Fprintln(progress, "bench: every system stopped, every host removed")
	}
	link := hosts.Shape{Delay: o.hostDelay}
	for _, h := range net.Hosts() {
		if err := h.Shape(ctx, link); err != nil {
			return nil, stop, err
		}
	}
	if err := net.ShapeMachine(ctx, link); err != nil {
		return nil, stop, err
	}
	fmt.Fprintf(progress, "%d hosts on 198.18.%d.0/24, every link and the clients' delayed %v each way (%v between two hosts)\n",
		len(net.Hosts()), hostsNetNumber, o.hostDelay, 2*o.hostDelay)

	var targets []benchmark.Target
	var sc *benchmark.SChainCluster
	if o.schain {
		an, hn, err := startHostedSChain(ctx, o, net.Hosts()[:n], progress)
		if an != nil {
			stops = append(stops, an.Stop)
		}
		if err != nil {
			return nil, stop, err
		}
		if sc, err = benchmark.AttachNetwork(hn); err != nil {
			return nil, stop, err
		}
		for _, nd := range sc.Nodes() {
			fmt.Fprintf(progress, "S-Chain %s is %s (%s)\n", sc.NodeName(nd.NodeID), nd.NodeID, nd.URI)
		}
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, stop, err
	}
	if o.legacyBinary != "" {
		bin = o.legacyBinary
	}
	for i, m := range o.legacyModes {
		var places []benchmark.LegacyHost
		for _, h := range net.Hosts()[n+3*i : n+3*i+3] {
			places = append(places, benchmark.LegacyHost{Addr: h.Addr.String(), Wrap: h.Wrap()})
		}
		dir := filepath.Join(o.out, "hosts", "legacy", m)
		fmt.Fprintf(progress, "starting the legacy raft allocator in %s mode on %s, %s, %s\n", m, places[0].Addr, places[1].Addr, places[2].Addr)
		t, err := legacyTarget(ctx, o, m, bin, dir, places)
		if err != nil {
			return nil, stop, err
		}
		stops = append(stops, t.Cluster.Stop)
		targets = append(targets, t)
	}
	if sc != nil {
		for _, m := range o.schainModes {
			if m == modeUncertified {
				return nil, stop, fmt.Errorf("%w: mode %s needs a second network (not with --hosts)", errBenchMode, m)
			}
			t, err := mainTarget(ctx, o, sc, m)
			if err != nil {
				return nil, stop, err
			}
			targets = append(targets, t)
		}
	}
	return targets, stop, nil
}

// startHostedSChain starts a plain avalanchego network on hs and deploys
// S-Chain on it with the local network's genesis and consensus
// parameters, each node's direct API on its own host.
func startHostedSChain(ctx context.Context, o benchOptions, hs []*hosts.Host, progress io.Writer) (*avanet.Network, hostedNetwork, error) {
	var places []avanet.Place
	for _, h := range hs {
		places = append(places, avanet.Place{Addr: h.Addr, Wrap: h.Wrap()})
	}
	root := filepath.Join(o.out, "hosts")
	an, err := avanet.Create(avanet.Config{
		Dir: filepath.Join(root, "nodes"), AvalancheGo: filepath.Join(o.buildDir, "avalanchego"),
		PluginDir: filepath.Join(o.buildDir, "plugins"), Places: places, Progress: progress,
	})
	if err != nil {
		return nil, hostedNetwork{}, err
	}
	if err := an.Start(ctx); err != nil {
		return an, hostedNetwork{}, err
	}
	token, err := vmconfig.GenerateToken()
	if err != nil {
		return an, hostedNetwork{}, err
	}
	wt, err := vmconfig.NewWriteToken(localnet.TokenName, token, nil, nil)
	if err != nil {
		return an, hostedNetwork{}, err
	}
	var cfgErr error
	chainConfig := func(nd *avanet.Node) []byte {
		cc := vmconfig.DefaultChainConfig()
		cc.WriteTokens, cc.DirectAPI = []vmconfig.WriteToken{wt}, nd.Addr.String()+":0"
		b, err := json.Marshal(cc)
		cfgErr = errors.Join(cfgErr, err)
		return b
	}
	subnetConfig, err := json.Marshal(map[string]any{"snowParameters": localnet.Snow(len(hs))})
	if err != nil {
		return an, hostedNetwork{}, err
	}
	genesis := localnet.Genesis(0, 0, o.poolChunk)
	rec, err := an.Deploy(ctx, filepath.Join(root, "deploy.json"), vm.ID, genesis, chainConfig, subnetConfig)
	if err = errors.Join(err, cfgErr); err != nil {
		return an, hostedNetwork{}, fmt.Errorf("deploying S-Chain on the hosts: %w", err)
	}
	fmt.Fprintf(progress, "S-Chain deployed on the hosts: subnet %s, chain %s\n", rec.SubnetID, rec.ChainID)
	return an, hostedNetwork{an: an, chain: rec.ChainID, token: token}, nil
}
