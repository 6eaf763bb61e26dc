// Package avanet runs a plain avalanchego network (the primary network
// only, no subnet) on given hosts, as an operator's machines would: each
// node with its own address, staking certificate and BLS key, a network
// genesis that makes every node an initial validator and funds one key on
// the P-chain, and every other node as a bootstrapper. S-Chain then comes
// onto it with `schain deploy`, as onto any network it did not start.
//
// Unlike tmpnet it assumes no 127.0.0.1: a node binds and announces its
// host's address on avalanchego's usual ports, and runs through its host's
// command prefix (ip netns exec).
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package avanet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ava-labs/avalanchego/api/health"
	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/genesis"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/staking"
	"github.com/ava-labs/avalanchego/upgrade"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/platformvm/reward"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/libevm/core"
	"github.com/ava-labs/libevm/core/types"
	"github.com/ava-labs/libevm/params"

	"github.com/s-chain/schain/operator/deploy"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/tests/framework/internal/proc"
	"github.com/s-chain/schain/tests/framework/localnet"
)

// The ports a node uses on its own address unless its place names others.
const (
	HTTPPort    = 9650
	StakingPort = 9651
)

// DefaultNetworkID is the network's ID unless given: any ID but mainnet's,
// Fuji's and avalanchego's built-in local network's.
const DefaultNetworkID = 2929

// Place is where a node runs: its host's address, the prefix that runs a
// command there, and its ports (zero: HTTPPort, StakingPort; nodes sharing
// an address, on loopback, need their own).
type Place struct {
	Addr                  netip.Addr
	Wrap                  []string
	HTTPPort, StakingPort uint16
}

func (p Place) ports() (uint16, uint16) {
	h, s := p.HTTPPort, p.StakingPort
	if h == 0 {
		h = HTTPPort
	}
	if s == 0 {
		s = StakingPort
	}
	return h, s
}

// Config is a network to create.
type Config struct {
	// Dir holds the network: a directory per node (keys, config, data,
	// logs) and the genesis.
	Dir         string
	AvalancheGo string
	PluginDir   string
	NetworkID   uint32
	Places      []Place
	// Flags are added to (and override) every node's flags.
	Flags    map[string]string
	Progress io.Writer
}

// Network is a created network.
type Network struct {
	Dir       string
	NetworkID uint32
	// Key is funded on the P-chain (and the X-chain): it pays for the
	// subnet and chain. KeyPath holds it (PrivateKey-<cb58>, 0600).
	Key     *secp256k1.PrivateKey
	KeyPath string
	Nodes   []*Node
	out     io.Writer
}

// Node is one avalanchego node of the network.
type Node struct {
	NodeID ids.NodeID
	Addr   netip.Addr
	// Staking is where its peers reach it.
	Staking netip.AddrPort
	Dir     string
	// URI is its HTTP API (http://addr:9650).
	URI      string
	config   string
	httpPort uint16
	flags    map[string]any
	p        *proc.Process
	spec     proc.Spec
}

// Create writes every node's keys and flags and the genesis; it starts
// nothing.
func Create(cfg Config) (*Network, error) {
	if len(cfg.Places) == 0 {
		return nil, errors.New("avanet: no place to run a node")
	}
	if cfg.NetworkID == 0 {
		cfg.NetworkID = DefaultNetworkID
	}
	switch cfg.NetworkID {
	case constants.MainnetID, constants.FujiID, constants.LocalID:
		return nil, fmt.Errorf("avanet: network ID %d is a built-in network's", cfg.NetworkID)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	key, err := secp256k1.NewPrivateKey()
	if err != nil {
		return nil, err
	}
	n := &Network{Dir: cfg.Dir, NetworkID: cfg.NetworkID, Key: key, KeyPath: filepath.Join(cfg.Dir, "funded.key"), out: cfg.Progress}
	if n.out == nil {
		n.out = io.Discard
	}
	_ = os.Remove(n.KeyPath)
	if err := subnet.WriteKey(n.KeyPath, key); err != nil {
		return nil, err
	}
	var stakers []genesis.UnparsedStaker
	for i, pl := range cfg.Places {
		nd, pop, err := newNode(filepath.Join(cfg.Dir, fmt.Sprintf("node%d", i+1)), pl)
		if err != nil {
			return nil, err
		}
		n.Nodes = append(n.Nodes, nd)
		stakers = append(stakers, genesis.UnparsedStaker{NodeID: nd.NodeID, DelegationFee: reward.PercentDenominator / 100, Signer: pop})
	}
	gen, err := n.genesis(stakers)
	if err != nil {
		return nil, err
	}
	genPath := filepath.Join(cfg.Dir, "genesis.json")
	if err := os.WriteFile(genPath, gen, 0o644); err != nil {
		return nil, err
	}
	abs := func(p string) string {
		a, _ := filepath.Abs(p)
		return a
	}
	common := map[string]any{}
	for k, v := range localnet.NodeFlags(localnet.Snow(len(cfg.Places)), nil) {
		common[k] = v
	}
	for k, v := range map[string]any{
		config.NetworkNameKey: strconv.FormatUint(uint64(cfg.NetworkID), 10), config.GenesisFileKey: abs(genPath),
		config.PluginDirKey: abs(cfg.PluginDir), config.HTTPAllowedHostsKey: "*", config.MinStakeDurationKey: "1s",
	} {
		common[k] = v
	}
	if len(cfg.Places) == 1 {
		// One node: no peer to bootstrap from, and (as in localnet) sybil
		// protection stays on.
		common[config.SybilProtectionEnabledKey] = true
	}
	for _, nd := range n.Nodes {
		nd.flags = map[string]any{}
		for k, v := range common {
			nd.flags[k] = v
		}
		var ips, ids []string
		for _, o := range n.Nodes {
			if o != nd {
				ips = append(ips, o.Staking.String())
				ids = append(ids, o.NodeID.String())
			}
		}
		for k, v := range map[string]any{
			config.PublicIPKey: nd.Addr.String(), config.HTTPHostKey: nd.Addr.String(), config.StakingHostKey: nd.Addr.String(),
			config.HTTPPortKey: nd.httpPort, config.StakingPortKey: nd.Staking.Port(),
			config.BootstrapIPsKey: strings.Join(ips, ","), config.BootstrapIDsKey: strings.Join(ids, ","),
			config.DataDirKey: abs(nd.Dir), config.LogsDirKey: abs(filepath.Join(nd.Dir, "logs")),
			config.ChainConfigDirKey:       abs(filepath.Join(nd.Dir, "configs", "chains")),
			config.SubnetConfigDirKey:      abs(filepath.Join(nd.Dir, "configs", "subnets")),
			config.StakingTLSKeyPathKey:    abs(filepath.Join(nd.Dir, "staking", "staker.key")),
			config.StakingCertPathKey:      abs(filepath.Join(nd.Dir, "staking", "staker.crt")),
			config.StakingSignerKeyPathKey: abs(filepath.Join(nd.Dir, "staking", "signer.key")),
		} {
			nd.flags[k] = v
		}
		for k, v := range cfg.Flags {
			nd.flags[k] = v
		}
		for _, dir := range []string{nd.ChainConfigDir(), nd.SubnetConfigDir()} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
		if err := nd.writeConfig(); err != nil {
			return nil, err
		}
		nd.spec = proc.Spec{
			Name: "avalanchego " + nd.URI, Wrap: pl(cfg.Places, nd).Wrap, Bin: abs(cfg.AvalancheGo),
			Args: []string{"--config-file=" + nd.config}, Dir: nd.Dir, Log: filepath.Join(nd.Dir, "avalanchego.log"),
		}
	}
	return n, nil
}

func pl(places []Place, nd *Node) Place {
	for _, p := range places {
		if _, s := p.ports(); netip.AddrPortFrom(p.Addr, s) == nd.Staking {
			return p
		}
	}
	return Place{}
}

// newNode makes a node's staking certificate and BLS key (in its
// directory, as an operator backs them up) and its proof of possession.
func newNode(dir string, p Place) (*Node, *signer.ProofOfPossession, error) {
	staking0 := filepath.Join(dir, "staking")
	if err := os.MkdirAll(staking0, 0o700); err != nil {
		return nil, nil, err
	}
	certPEM, keyPEM, err := staking.NewCertAndKeyBytes()
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(staking0, "staker.crt"), certPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(staking0, "staker.key"), keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	tlsCert, err := staking.LoadTLSCertFromBytes(keyPEM, certPEM)
	if err != nil {
		return nil, nil, err
	}
	cert, err := staking.ParseCertificate(tlsCert.Leaf.Raw)
	if err != nil {
		return nil, nil, err
	}
	bls, err := localsigner.New()
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(staking0, "signer.key"), bls.ToBytes(), 0o600); err != nil {
		return nil, nil, err
	}
	pop, err := signer.NewProofOfPossession(bls)
	if err != nil {
		return nil, nil, err
	}
	httpPort, stakingPort := p.ports()
	nd := &Node{
		NodeID: ids.NodeIDFromCert(cert), Addr: p.Addr, Staking: netip.AddrPortFrom(p.Addr, stakingPort), Dir: dir,
		URI: fmt.Sprintf("http://%s", netip.AddrPortFrom(p.Addr, httpPort)), httpPort: httpPort,
	}
	nd.config = filepath.Join(dir, "config.json")
	if abs, err := filepath.Abs(nd.config); err == nil {
		nd.config = abs
	}
	return nd, pop, nil
}

// genesis makes every node an initial validator (staked from an address
// nobody holds, locked for a week) and funds the network's key: on the
// P-chain (unlocked), the X-chain and the C-chain.
func (n *Network) genesis(stakers []genesis.UnparsedStaker) ([]byte, error) {
	hrp := constants.GetHRP(n.NetworkID)
	stakeKey, err := secp256k1.NewPrivateKey()
	if err != nil {
		return nil, err
	}
	stakeAddr, err := address.Format("X", hrp, stakeKey.Address().Bytes())
	if err != nil {
		return nil, err
	}
	keyAddr, err := address.Format("X", hrp, n.Key.Address().Bytes())
	if err != nil {
		return nil, err
	}
	for i := range stakers {
		stakers[i].RewardAddress = stakeAddr
	}
	now := time.Now()
	stake := uint64(len(stakers)) * units.MegaAvax
	locked := uint64(now.Add(7 * 24 * time.Hour).Unix())
	zero := "0x0000000000000000000000000000000000000000"
	cgen, err := json.Marshal(&core.Genesis{
		Config:     &params.ChainConfig{ChainID: big.NewInt(int64(n.NetworkID))},
		Difficulty: big.NewInt(0), Timestamp: uint64(upgrade.InitiallyActiveTime.Unix()), GasLimit: 100_000_000,
		Alloc: types.GenesisAlloc{n.Key.EthAddress(): {Balance: new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil)}},
	})
	if err != nil {
		return nil, err
	}
	g := genesis.UnparsedConfig{
		NetworkID: n.NetworkID,
		Allocations: []genesis.UnparsedAllocation{
			{ETHAddr: zero, AVAXAddr: stakeAddr, UnlockSchedule: []genesis.LockedAmount{{Amount: stake, Locktime: locked}}},
			{ETHAddr: zero, AVAXAddr: keyAddr, InitialAmount: 1000 * units.MegaAvax, UnlockSchedule: []genesis.LockedAmount{{Amount: 100 * units.MegaAvax}}},
		},
		StartTime:                  uint64(now.Unix()),
		InitialStakedFunds:         []string{stakeAddr},
		InitialStakeDuration:       365 * 24 * 60 * 60,
		InitialStakeDurationOffset: 90 * 60,
		InitialStakers:             stakers,
		CChainGenesis:              string(cgen),
		Message:                    "s-chain hosts",
	}
	return json.MarshalIndent(g, "", "  ")
}

func (nd *Node) writeConfig() error {
	b, err := json.MarshalIndent(nd.flags, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(nd.config, b, 0o644)
}

// SetFlag sets a flag of the node for its next start (--track-subnets
// after a deploy).
func (nd *Node) SetFlag(key string, value any) error {
	nd.flags[key] = value
	return nd.writeConfig()
}

// Configure gives the node what it needs to run a deployed chain, as an
// operator would: the chain config in <chain-config-dir>/<chainID>/
// config.json, the subnet config (consensus parameters) in
// <subnet-config-dir>/<subnetID>.json, and --track-subnets. The node reads
// them at its next start.
func (nd *Node) Configure(subnetID, chainID ids.ID, chainConfig, subnetConfig []byte) error {
	dir := filepath.Join(nd.ChainConfigDir(), chainID.String())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), chainConfig, 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(nd.SubnetConfigDir(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(nd.SubnetConfigDir(), subnetID.String()+".json"), subnetConfig, 0o644); err != nil {
		return err
	}
	return nd.SetFlag(config.TrackSubnetsKey, subnetID.String())
}

// ChainConfigDir is the node's --chain-config-dir; SubnetConfigDir its
// --subnet-config-dir.
func (nd *Node) ChainConfigDir() string { return nd.flags[config.ChainConfigDirKey].(string) }

// SubnetConfigDir is the node's --subnet-config-dir.
func (nd *Node) SubnetConfigDir() string { return nd.flags[config.SubnetConfigDirKey].(string) }

// LogDir is the node's --log-dir.
func (nd *Node) LogDir() string { return nd.flags[config.LogsDirKey].(string) }

// Start starts every node, then waits until each is healthy.
func (n *Network) Start(ctx context.Context) error {
	fmt.Fprintf(n.out, "starting %d avalanchego nodes (network %d)...\n", len(n.Nodes), n.NetworkID)
	for _, nd := range n.Nodes {
		if err := nd.Start(); err != nil {
			return err
		}
	}
	return n.WaitHealthy(ctx)
}

// WaitHealthy waits until every node reports healthy (a lone node: ready,
// since avalanchego's network check fails without peers). A node whose
// process exits fails it at once, with the end of its output.
func (n *Network) WaitHealthy(ctx context.Context) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for _, nd := range n.Nodes {
		c := health.NewClient(nd.URI)
		check := c.Health
		if len(n.Nodes) == 1 {
			check = c.Readiness
		}
		for {
			if nd.p == nil || !nd.p.Running() {
				return fmt.Errorf("avanet: node %s (%s) is not running:\n%s", nd.NodeID, nd.URI, nd.Tail(20))
			}
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			reply, err := check(actx, nil)
			cancel()
			if err == nil && reply.Healthy {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("avanet: node %s (%s) not healthy: %w (last: %v)\n%s", nd.NodeID, nd.URI, ctx.Err(), err, nd.Tail(20))
			case <-tick.C:
			}
		}
	}
	return nil
}

// Stop stops every node at once and waits for each to exit.
func (n *Network) Stop(ctx context.Context) error {
	errs := make(chan error, len(n.Nodes))
	for _, nd := range n.Nodes {
		go func() { errs <- nd.Stop(ctx) }()
	}
	var all []error
	for range n.Nodes {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// Start (re)starts the node from its directory.
func (nd *Node) Start() error {
	if nd.p == nil {
		p, err := proc.Start(nd.spec)
		nd.p = p
		return err
	}
	return nd.p.Start()
}

// Stop stops the node (SIGTERM, then SIGKILL after a grace).
func (nd *Node) Stop(ctx context.Context) error {
	if nd.p == nil {
		return nil
	}
	return nd.p.Stop(ctx)
}

// Kill is kill -9 of the node, and the wait for its exit.
func (nd *Node) Kill(ctx context.Context) error {
	if nd.p == nil {
		return nil
	}
	return nd.p.Kill(ctx)
}

// Signal sends sig to the node and its plugins (its process group):
// SIGSTOP freezes them as a paused machine would, SIGCONT resumes them.
// Freezing the node alone would leave its plugin pinging a database server
// that never answers, which gRPC's keepalive gives up on after about 40 s
// (docs/operating/limits.md).
func (nd *Node) Signal(sig syscall.Signal) error {
	if nd.p == nil {
		return errors.New("avanet: node never started")
	}
	return nd.p.SignalGroup(sig)
}

// PID is the node process's ID.
func (nd *Node) PID() int {
	if nd.p == nil {
		return 0
	}
	return nd.p.PID()
}

// Tail is the end of the node's output.
func (nd *Node) Tail(lines int) string {
	if nd.p == nil {
		return ""
	}
	return nd.p.Tail(lines)
}

// Deploy brings S-Chain onto the network as an operator does with `schain
// deploy`: a first run (the subnet and its validators; it stops waiting
// for the nodes), every node configured for the chain (Configure) and
// restarted, and a second run that creates the chain and waits until every
// node runs it. The record is kept at recordPath; chainConfig is each
// node's chain config.
func (n *Network) Deploy(ctx context.Context, recordPath string, vmID ids.ID, genesis []byte, chainConfig func(*Node) []byte, subnetConfig []byte) (*deploy.Record, error) {
	spec := deploy.Spec{
		Key: n.Key, KeyPath: n.KeyPath, Genesis: genesis, VMID: vmID, RecordPath: recordPath,
		TrackWait: 2 * time.Minute, ServeWait: 3 * time.Minute, Progress: n.out,
	}
	for _, nd := range n.Nodes {
		spec.Nodes = append(spec.Nodes, nd.URI)
	}
	d, err := deploy.New(spec, deploy.Dial)
	if err != nil {
		return nil, err
	}
	spec.TrackWait = 0
	first, err := deploy.New(spec, deploy.Dial)
	if err != nil {
		return nil, err
	}
	res, err := first.Run(ctx, false)
	if err != nil && !errors.Is(err, deploy.ErrPending) || res == nil || res.Record == nil {
		return nil, errors.Join(err, errors.New("avanet: the deployment's first run made no record"))
	}
	rec := res.Record
	for _, nd := range n.Nodes {
		if err := nd.Configure(rec.SubnetID, rec.ChainID, chainConfig(nd), subnetConfig); err != nil {
			return nil, err
		}
	}
	if err := n.Stop(ctx); err != nil {
		return nil, err
	}
	for _, nd := range n.Nodes {
		if err := nd.Start(); err != nil {
			return nil, err
		}
	}
	if err := n.WaitHealthy(ctx); err != nil {
		return nil, err
	}
	if res, err = d.Run(ctx, false); err != nil {
		var todo []string
		if res != nil {
			todo = res.Pending
		}
		return nil, fmt.Errorf("avanet: deploying: %w (to do: %v)", err, todo)
	}
	return res.Record, nil
}
