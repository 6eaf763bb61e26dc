// Package localnet runs a local S-Chain network: avalanchego nodes on
// 127.0.0.1 (tmpnet processes), a subnet validated by all of them, and one
// S-Chain chain on it. `schain network start|stop|status`, `make run` and
// the e2e tests use it.
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package localnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ava-labs/avalanchego/api/health"
	"github.com/ava-labs/avalanchego/config"
	nodeconfig "github.com/ava-labs/avalanchego/config/node"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/ava-labs/avalanchego/utils/logging"

	"github.com/s-chain/schain/vm"
	vmconfig "github.com/s-chain/schain/vm/config"
)

// SubnetName names the S-Chain subnet inside a tmpnet network.
const SubnetName = "schain"

var (
	// ErrNoNetwork means no network was started under the root directory.
	ErrNoNetwork = errors.New("localnet: no network (start one with `schain-dev network start` or `make run`)")
	// ErrMissingBinary means the node or plugin binary was not built.
	ErrMissingBinary = errors.New("localnet: binary missing (run `make build`)")
	// ErrNodeCount means Config.Nodes is outside [1, MaxNodes].
	ErrNodeCount = errors.New("localnet: number of nodes out of bounds")
)

// Config describes a network to start.
type Config struct {
	// Nodes is the number of validators, 1 to MaxNodes. One node keeps
	// sybil protection on and validates the subnet alone: the same
	// consensus, Verify and Accept as four, with a quorum of one voter.
	Nodes int
	// RootDir holds network directories and the pointer to the current one.
	RootDir string
	// AvalancheGo is the node binary; PluginDir holds the plugin named by
	// vm.ID.
	AvalancheGo string
	PluginDir   string
	// Genesis is the S-Chain genesis JSON. Empty: the chain starts now,
	// with the local network's liveness rule (RoundDuration,
	// LivenessRounds, or the overrides below).
	Genesis []byte
	// RoundDuration and LivenessRounds, if not zero, replace the local
	// network's liveness rule in the default genesis (the bench measures
	// failover per setting); ignored with Genesis.
	RoundDuration  time.Duration
	LivenessRounds uint64
	// PoolChunk, if not zero, sets the default genesis's poolChunk (ids per
	// reservation of an owner's id pool); ignored with Genesis.
	PoolChunk uint64
	// Snow are the network's consensus parameters, the subnet's and the
	// primary network's (nil: Snow(Nodes)).
	Snow map[string]any
	// ChainConfig is the S-Chain chain config given to every node (nil:
	// vmconfig.DefaultChainConfig()). Start adds the network's write token to it.
	ChainConfig *vmconfig.ChainConfig
	// Token is the network's write token (empty: Start generates one). Its
	// hash goes into the chain config as TokenName; the token itself is
	// written to <network dir>/token (mode 0600), where Open finds it, so
	// that `schain` commands, the demo and the e2e tests write with it.
	Token string
	// ProfileDir, if set, makes every node and its plugin write CPU profiles
	// every ProfileEvery (zero: 10 s), for finding where a load's CPU goes:
	// the node's continuous profiler into <ProfileDir>/<nodeID>/ (cpu.profile
	// being written, cpu.profile.1 the newest complete one, and so on), the
	// plugin's into <ProfileDir>/<nodeID>.<n>.pprof (n counting up).
	ProfileDir   string
	ProfileEvery time.Duration
	// NodeFlags are avalanchego flags for every node, over the local
	// network's defaults (experiments: measuring a node setting in pairs).
	NodeFlags map[string]string
	// Progress receives human-readable progress lines.
	Progress io.Writer
}

// defaultProfileEvery is the length of one profile with ProfileDir.
const defaultProfileEvery = 10 * time.Second

// profileFiles bounds the profiles kept per process with ProfileDir: an
// hour of 10 s profiles.
const profileFiles = 360

// Snow are the consensus parameters of a local network of nodes equal
// validators: k=60, alphaPreference=33, alphaConfidence=37 and beta=6 (40
// and 5 from four validators on), concurrentRepolls=beta.
//
// Avalanchego samples a poll's k validators by stake units without
// replacement, so one validator fills several places of one sample (about
// k/n), and a node's own vote counts as often as it samples itself. What
// a poll costs does not depend on k: it queries each sampled node once,
// and its answer counts as many votes as it has places. Its cost is per
// poll, and a block needs beta successful polls. So k is large, to make
// the votes of a share of the stake concentrate around that share, and
// beta small (TestSnow holds the figures below):
//
//   - A validator cut off from the others must never finalize alone: with
//     the earlier k=3, alpha=2, beta=3 on 3 nodes, one sampled itself twice
//     in a poll a quarter of the time and forked from the majority (found
//     by the partition test, TestX_Partition). A third of the stake passes
//     a poll of 60 at 37 votes with probability 7e-6, six in a row 8e-32.
//   - Of two validators left after a removal, one alone must practically
//     never finalize: half the stake passes 4.6% of polls, six in a row
//     1e-8 (6.5e-8 with the earlier k=20, alpha 12, beta 12).
//   - From four validators on, a network split in halves must not finalize
//     on both sides: at alphaConfidence 40, half the stake passes 0.67% of
//     polls, five in a row 1.4e-11 (7e10 polls on average, years of a
//     split; 2.7e-11 with the earlier k=20, alpha 13, beta 12).
//   - With one validator down the others keep finalizing: two of three
//     pass 83% of polls (six in a row after 12 polls on average, 61
//     before), three of four 95% (five in a row after 6 polls, 26 before:
//     every acceptance of a failover waited on that).
//
// And with every validator up a block is decided after beta polls: 6 or 5
// instead of 12, each a query to and an answer from every other node.
//
// concurrentRepolls = beta (its bound) keeps as many polls in flight as
// a block needs successes: a block's polls overlap instead of running a
// few at a time, so acceptance takes about one poll round trip (under
// load a round trip is tens of milliseconds, the largest part of a
// per-request allocation's latency). It is not a safety parameter (k,
// alpha and beta are).
func Snow(nodes int) map[string]any {
	alphaConfidence, beta := 37, 6
	if nodes >= 4 {
		alphaConfidence, beta = 40, 5
	}
	return map[string]any{"k": 60, "alphaPreference": 33, "alphaConfidence": alphaConfidence, "beta": beta, "concurrentRepolls": beta}
}

// RoundDuration and LivenessRounds are the local network's liveness rule:
// every validator heartbeats once per round, and one that stops is dropped
// from the members after LivenessRounds+1 rounds (plus the heartbeat lead)
// at most: 11 s, so that a dead owner's ranges allocate again within the
// 15 s target (a real SeaweedFS master fails over in about 16 s). Why
// these values is in docs/concepts/liveness.md (Choosing the round): measured by
// `make bench` (failover per round setting, flapping under load) and the
// in-process cost benchmark (BenchmarkLivenessRound).
const (
	RoundDuration  = 5 * time.Second
	LivenessRounds = 1
)

// txLifetime is how long a transaction stays valid on the local network:
// longer than three proposer slots of a dead validator (15 s), so that work
// waiting out such a gap is not re-signed for nothing.
const txLifetime = 20 * time.Second

// Genesis is the local network's default genesis, for a chain starting
// now: round and K (zero: the local network's), the transaction lifetime in
// rounds that covers txLifetime, and poolChunk (zero: the genesis default).
func Genesis(round time.Duration, k, poolChunk uint64) []byte {
	if round == 0 {
		round = RoundDuration
	}
	if k == 0 {
		k = LivenessRounds
	}
	lifetime := max(uint64((txLifetime+round-1)/round), 2)
	// The chain starts now: with a genesis time after the proposer VM's
	// fork, the chain reaches blocks with a P-chain context one block
	// sooner.
	upgrades, err := json.Marshal(vmconfig.UpgradesAtGenesis())
	if err != nil {
		panic(fmt.Sprintf("localnet: encoding the upgrades: %v", err))
	}
	return []byte(fmt.Sprintf(`{"timestamp": %d, "roundDurationMs": %d, "livenessRounds": %d, "txLifetimeRounds": %d, "poolChunk": %d, "upgrades": %s}`,
		time.Now().UnixMilli(), round.Milliseconds(), k, lifetime, poolChunk, upgrades))
}

// FailoverBound is how long a dead validator stays a member of a network
// with this liveness rule (zero: the local network's; see
// config.Genesis.FailoverBound).
func FailoverBound(round time.Duration, k uint64) time.Duration {
	g, err := vmconfig.ParseGenesis(Genesis(round, k, 0))
	if err != nil {
		panic(fmt.Sprintf("localnet: the default genesis is invalid: %v", err))
	}
	return g.FailoverBound()
}

// DirectAPI is where every local node's plugin also serves the API itself
// (chain config directAPI) unless the given chain config names another
// address: loopback, any free port; getNode announces the one each got.
const DirectAPI = "127.0.0.1:0"

// TokenName names the network's write token in the nodes' chain config
// (and so in their logs and metrics).
const TokenName = "localnet"

// TokenRanges is the scope of the network's token: every range, and, named
// since no wildcard stands for them, every SeaweedFS prefix's floor,
// volume and key-band ranges (the local network is its operator's, who
// runs cutovers and benchmarks with one token).
var TokenRanges = []string{"*", "*/floor/*", "*/volumes", "*/keys/*"}

// TokenFile is the file, in the network directory, holding the network's
// write token.
const TokenFile = "token"

// DefaultNodes is the local network's size: four equal validators, the
// fewest that keep finalizing with one of them down (a certificate needs
// more than 2/3 of the stake: of three, all of them).
const DefaultNodes = 4

// MaxNodes bounds a local network: every validator is a node and a plugin
// process on this one machine, and each opens a connection to every other.
const MaxNodes = 16

// DefaultConfig starts DefaultNodes nodes from the build directory's
// binaries.
func DefaultConfig(buildDir string) Config {
	return Config{
		Nodes:       DefaultNodes,
		RootDir:     filepath.Join(buildDir, "network"),
		AvalancheGo: filepath.Join(buildDir, "avalanchego"),
		PluginDir:   filepath.Join(buildDir, "plugins"),
		Progress:    os.Stdout,
	}
}

// Node is one running validator as a client needs it.
type Node struct {
	NodeID ids.NodeID `json:"nodeID"`
	URI    string     `json:"uri"`
	PID    int        `json:"pid"`
	// StakingPort is where the node's peers reach it (127.0.0.1): what a
	// partition test cuts.
	StakingPort uint16 `json:"stakingPort"`
}

// Network is a started network.
type Network struct {
	Dir      string `json:"dir"`
	SubnetID ids.ID `json:"subnetID"`
	ChainID  ids.ID `json:"chainID"`
	Nodes    []Node `json:"nodes"`
	// Token is the network's write token (from <Dir>/token; empty for a
	// network started before tokens existed). Never printed.
	Token string `json:"-"`
	tmp   *tmpnet.Network
	log   logging.Logger
}

// TokenPath is the file holding the network's write token.
func (n *Network) TokenPath() string { return filepath.Join(n.Dir, TokenFile) }

// ChainURIs are the JSON-RPC endpoints of every node.
func (n *Network) ChainURIs() []string {
	out := make([]string, len(n.Nodes))
	for i, nd := range n.Nodes {
		out[i] = n.ChainURI(nd)
	}
	return out
}

// ChainURIsBase are the nodes' base URIs (what clients take with a chain ID).
func (n *Network) ChainURIsBase() []string {
	out := make([]string, len(n.Nodes))
	for i, nd := range n.Nodes {
		out[i] = nd.URI
	}
	return out
}

// ChainURI is a node's S-Chain JSON-RPC endpoint.
func (n *Network) ChainURI(nd Node) string { return nd.URI + "/ext/bc/" + n.ChainID.String() }

func (c Config) verify() error {
	if c.Nodes < 1 || c.Nodes > MaxNodes {
		return fmt.Errorf("%w: %d (hint: 1 to %d; every node is two processes on this machine)", ErrNodeCount, c.Nodes, MaxNodes)
	}
	for _, p := range []string{c.AvalancheGo, filepath.Join(c.PluginDir, vm.ID.String())} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: %s", ErrMissingBinary, p)
		}
	}
	return nil
}

// ToolingLog is the file under a root directory that avalanchego's network
// tooling (tmpnet) logs to: paths, ports and node starts, which a person
// starting a network does not need on the screen.
const ToolingLog = "tooling.log"

// logger is the node tooling's logger: it appends to rootDir's ToolingLog
// (io.Discard if that cannot be opened: the log is no reason to fail).
func logger(rootDir string) logging.Logger {
	var w io.Writer = io.Discard
	if f, err := os.OpenFile(filepath.Join(rootDir, ToolingLog), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		w = f
	}
	return logging.NewLogger("", logging.NewWrappedCore(logging.Info, nopCloser{w}, logging.Plain.ConsoleEncoder()))
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Start creates and bootstraps a new network under cfg.RootDir and waits
// until every node is healthy. On failure it stops what it started.
func Start(ctx context.Context, cfg Config) (*Network, error) {
	if err := cfg.verify(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return nil, err
	}
	absAvago, err := filepath.Abs(cfg.AvalancheGo)
	if err != nil {
		return nil, err
	}
	absPlugins, err := filepath.Abs(cfg.PluginDir)
	if err != nil {
		return nil, err
	}
	snow := cfg.Snow
	if snow == nil {
		snow = Snow(cfg.Nodes)
	}
	genesis := cfg.Genesis
	if len(genesis) == 0 {
		genesis = Genesis(cfg.RoundDuration, cfg.LivenessRounds, cfg.PoolChunk)
	}
	token, chainConfig, err := cfg.chainConfig()
	if err != nil {
		return nil, err
	}
	log := logger(cfg.RootDir)
	nodes := tmpnet.NewNodesOrPanic(cfg.Nodes)
	if err := cfg.profileNodes(nodes); err != nil {
		return nil, err
	}
	flags := NodeFlags(snow, cfg.NodeFlags)
	if cfg.Nodes == 1 {
		singleNode(flags)
	}
	tn := &tmpnet.Network{
		Owner:        "schain",
		DefaultFlags: flags,
		DefaultRuntimeConfig: tmpnet.NodeRuntimeConfig{Process: &tmpnet.ProcessRuntimeConfig{
			AvalancheGoPath: absAvago, PluginDir: absPlugins, ReuseDynamicPorts: true,
		}},
		Nodes: nodes,
		Subnets: []*tmpnet.Subnet{{
			Name:   SubnetName,
			Config: tmpnet.ConfigMap{"snowParameters": snow},
			Chains: []*tmpnet.Chain{{
				VMID: vm.ID, Genesis: genesis, Config: chainConfig, VersionArgs: []string{"version-json"},
			}},
			ValidatorIDs: tmpnet.NodesToIDs(nodes...),
		}},
	}
	fmt.Fprintf(progress(cfg), "starting %d avalanchego nodes on 127.0.0.1 with an S-Chain subnet (about 20 s; the node tooling logs to %s)...\n",
		cfg.Nodes, filepath.Join(cfg.RootDir, ToolingLog))
	bootstrap := tmpnet.BootstrapNewNetwork
	if cfg.Nodes == 1 {
		bootstrap = bootstrapSingle
	}
	if err := bootstrap(ctx, log, tn, cfg.RootDir); err != nil {
		if tn.Dir != "" {
			_ = tn.Stop(context.Background())
		}
		return nil, fmt.Errorf("bootstrapping the network: %w", err)
	}
	n, err := describe(ctx, tn, log)
	if err != nil {
		_ = tn.Stop(context.Background())
		return nil, err
	}
	if err := writeToken(n.TokenPath(), token); err != nil {
		_ = tn.Stop(context.Background())
		return nil, err
	}
	n.Token = token
	if err := writeCurrent(cfg.RootDir, n.Dir); err != nil {
		_ = tn.Stop(context.Background())
		return nil, err
	}
	return n, nil
}

// NodeFlags are the flags of every node: tmpnet's defaults, the local
// network's settings, then extra (Config.NodeFlags).
//
// Three of them cut work that every node does whatever the load, which on
// one machine shared by all the nodes and plugins takes cores from the
// allocations (measured in pairs, docs/internals/performance-log.md "Where the CPU
// goes"):
//   - consensus-frontier-poll-frequency 1s instead of 100 ms: every chain of
//     every node (P, X, C and S-Chain) sends a pull query to a validator at
//     that frequency while it has no processing block, and the primary
//     network's chains have none almost always: 90 of the 3 nodes' queries
//     per second that nobody needs here. It only bounds how soon a node
//     that missed an accepted block (a partition, a restart) hears of it.
//   - system-tracker-frequency 5s instead of 500 ms: the node samples the
//     CPU use of itself and its plugin from /proc for message throttling
//     (7% of an idle node's CPU); peers are all on this machine.
//   - network-compression-type none: the peers are on loopback, where zstd
//     (a fresh decoder per message) only costs CPU.
func NodeFlags(snow map[string]any, extra map[string]string) tmpnet.FlagsMap {
	flags := tmpnet.DefaultTmpnetFlags()
	flags[config.FdLimitKey] = "8192"
	flags[config.ProposerVMUseCurrentHeightKey] = "true"
	flags[config.ProposerVMMinBlockDelayKey] = "0s"
	flags[config.LogLevelKey] = "info"
	flags[config.ConsensusFrontierPollFrequencyKey] = "1s"
	flags[config.SystemTrackerFrequencyKey] = "5s"
	flags[config.NetworkCompressionTypeKey] = "none"
	setPrimaryConsensus(flags, snow)
	for k, v := range extra {
		flags[k] = v
	}
	return flags
}

// singleNode keeps a one-node network on the path of every other: tmpnet
// turns sybil protection off for a lone node by default (then the node
// validates with a made-up weight, not as the P-chain's validator). With
// it on, the node is the subnet's only validator on the P-chain, and
// consensus, certificates and liveness run on that set as on four.
func singleNode(flags tmpnet.FlagsMap) {
	flags[config.SybilProtectionEnabledKey] = "true"
}

// bootstrapSingle is tmpnet's bootstrap for a network of one node, which
// waits for the node to be ready instead of healthy: avalanchego's network
// health check fails on a node that has no peer to exchange messages with,
// whatever its flags, while every chain it runs is bootstrapped and
// deciding blocks alone.
func bootstrapSingle(ctx context.Context, log logging.Logger, tn *tmpnet.Network, rootDir string) error {
	if err := tn.EnsureDefaultConfig(ctx, log); err != nil {
		return err
	}
	if err := tn.Create(rootDir); err != nil {
		return err
	}
	nd := tn.Nodes[0]
	if err := tn.StartNode(ctx, nd); err != nil {
		return err
	}
	if err := waitReady(ctx, nd); err != nil {
		return err
	}
	if _, err := tn.CreateSubnets(ctx, log, nd); err != nil {
		return err
	}
	// The restart makes the node track the subnet and read the chain config.
	if err := nd.Restart(ctx); err != nil {
		return err
	}
	return waitReady(ctx, nd)
}

// waitReady waits until every chain the node runs is bootstrapped (its
// readiness checks pass).
func waitReady(ctx context.Context, nd *tmpnet.Node) error {
	ready, err := health.AwaitReady(ctx, health.NewClient(nd.URI), 500*time.Millisecond, nil)
	if err != nil || !ready {
		return fmt.Errorf("localnet: node %s not ready: %w", nd.NodeID, errors.Join(err, ctx.Err()))
	}
	return nil
}

// waitServing waits until a started node serves: healthy, or for the only
// node of a network, ready (see bootstrapSingle).
func (n *Network) waitServing(ctx context.Context, nd *tmpnet.Node) error {
	if len(n.tmp.Nodes) == 1 {
		return waitReady(ctx, nd)
	}
	return nd.WaitForHealthy(ctx)
}

// chainConfig returns the network's token and the chain config JSON that
// lists its hash.
func (c Config) chainConfig() (string, string, error) {
	token := c.Token
	if token == "" {
		var err error
		if token, err = vmconfig.GenerateToken(); err != nil {
			return "", "", err
		}
	}
	cc := vmconfig.DefaultChainConfig()
	if c.ChainConfig != nil {
		cc = *c.ChainConfig
		cc.WriteTokens = slices.Clone(cc.WriteTokens)
	}
	wt, err := vmconfig.NewWriteToken(TokenName, token, TokenRanges, []string{vmconfig.EveryMethod})
	if err != nil {
		return "", "", err
	}
	cc.WriteTokens = append(cc.WriteTokens, wt)
	if cc.DirectAPI == "" {
		cc.DirectAPI = DirectAPI
	}
	if c.ProfileDir != "" {
		dir, err := filepath.Abs(c.ProfileDir)
		if err != nil {
			return "", "", err
		}
		cc.CPUProfileDir, cc.CPUProfileEveryMs, cc.CPUProfileMaxFiles = dir, uint64(c.profileEvery().Milliseconds()), profileFiles
	}
	if err := cc.Verify(); err != nil {
		return "", "", err
	}
	b, err := json.Marshal(cc)
	if err != nil {
		return "", "", err
	}
	return token, string(b), nil
}

func (c Config) profileEvery() time.Duration {
	if c.ProfileEvery == 0 {
		return defaultProfileEvery
	}
	return c.ProfileEvery
}

// profileNodes turns on the nodes' continuous profilers, each into a
// directory of its own (their file names are fixed).
func (c Config) profileNodes(nodes []*tmpnet.Node) error {
	if c.ProfileDir == "" {
		return nil
	}
	dir, err := filepath.Abs(c.ProfileDir)
	if err != nil {
		return err
	}
	for _, nd := range nodes {
		nd.Flags[config.ProfileDirKey] = filepath.Join(dir, nd.NodeID.String())
		nd.Flags[config.ProfileContinuousEnabledKey] = "true"
		nd.Flags[config.ProfileContinuousFreqKey] = c.profileEvery().String()
		nd.Flags[config.ProfileContinuousMaxFilesKey] = strconv.Itoa(profileFiles)
	}
	return nil
}

// writeToken stores the token readable by its owner only.
func writeToken(path, token string) error {
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("localnet: writing the network's token: %w", err)
	}
	// WriteFile keeps the mode of an existing file: make sure.
	return os.Chmod(path, 0o600)
}

// ReadToken reads a token file (surrounding whitespace trimmed).
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

func progress(cfg Config) io.Writer {
	if cfg.Progress == nil {
		return io.Discard
	}
	return cfg.Progress
}

// Open reads the current network of rootDir.
func Open(ctx context.Context, rootDir string, _ io.Writer) (*Network, error) {
	b, err := os.ReadFile(filepath.Join(rootDir, "current"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoNetwork
	}
	if err != nil {
		return nil, err
	}
	log := logger(rootDir)
	tn, err := tmpnet.ReadNetwork(ctx, log, string(b))
	if err != nil {
		return nil, fmt.Errorf("reading network %s: %w", b, err)
	}
	return describe(ctx, tn, log)
}

func writeCurrent(rootDir, dir string) error {
	return os.WriteFile(filepath.Join(rootDir, "current"), []byte(dir), 0o644)
}

func describe(_ context.Context, tn *tmpnet.Network, log logging.Logger) (*Network, error) {
	s := tn.GetSubnet(SubnetName)
	if s == nil || len(s.Chains) == 0 {
		return nil, fmt.Errorf("localnet: network %s has no %q subnet", tn.Dir, SubnetName)
	}
	n := &Network{Dir: tn.Dir, SubnetID: s.SubnetID, ChainID: s.Chains[0].ChainID, tmp: tn, log: log}
	if tok, err := ReadToken(n.TokenPath()); err == nil {
		n.Token = tok
	}
	for _, nd := range tn.Nodes {
		pc, _ := readProcess(nd)
		n.Nodes = append(n.Nodes, Node{NodeID: nd.NodeID, URI: nd.URI, PID: pc.PID, StakingPort: pc.StakingAddress.Port()})
	}
	// A stable order, so "node1" means the same node in every command.
	slices.SortFunc(n.Nodes, func(a, b Node) int { return a.NodeID.Compare(b.NodeID) })
	return n, nil
}

func readProcess(nd *tmpnet.Node) (nodeconfig.ProcessContext, error) {
	var pc nodeconfig.ProcessContext
	b, err := os.ReadFile(filepath.Join(nd.DataDir, config.DefaultProcessContextFilename))
	if err != nil {
		return pc, err
	}
	return pc, json.Unmarshal(b, &pc)
}

// Stop stops every node that runs and waits for the processes to exit. A
// node that died (kill -9, a crash) is passed over: tmpnet's own stop
// asks each node's API for its metrics and fails on a dead one, which
// left the network half stopped and "current" behind.
func (n *Network) Stop(ctx context.Context) error {
	var running []*tmpnet.Node
	for _, nd := range n.tmp.Nodes {
		pc, err := readProcess(nd)
		if err != nil || pc.PID == 0 || gone(pc.PID) {
			_ = os.Remove(filepath.Join(nd.DataDir, config.DefaultProcessContextFilename))
			continue
		}
		running = append(running, nd)
	}
	var errs []error
	for _, nd := range running {
		if err := nd.InitiateStop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", nd.NodeID, err))
		}
	}
	for _, nd := range running {
		if err := nd.WaitForStopped(ctx); err != nil {
			errs = append(errs, fmt.Errorf("waiting for %s to stop: %w", nd.NodeID, err))
		}
	}
	return errors.Join(errs...)
}

// StopAll stops the current network of rootDir, if any.
func StopAll(ctx context.Context, rootDir string, progress io.Writer) error {
	n, err := Open(ctx, rootDir, progress)
	if err != nil {
		return err
	}
	if err := n.Stop(ctx); err != nil {
		return err
	}
	return os.Remove(filepath.Join(rootDir, "current"))
}

func (n *Network) node(id ids.NodeID) (*tmpnet.Node, error) { return n.tmp.GetNode(id) }

// StopNode stops one node gracefully and waits until it exited.
func (n *Network) StopNode(ctx context.Context, id ids.NodeID) error {
	nd, err := n.node(id)
	if err != nil {
		return err
	}
	return nd.Stop(ctx)
}

// KillNode sends SIGKILL to one node (a crash, not a shutdown) and waits
// until the process is gone.
func (n *Network) KillNode(ctx context.Context, id ids.NodeID) error {
	nd, err := n.node(id)
	if err != nil {
		return err
	}
	pc, err := readProcess(nd)
	if err != nil {
		return fmt.Errorf("finding the process of %s: %w", id, err)
	}
	if err := syscall.Kill(pc.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", id, pc.PID, err)
	}
	for {
		if gone(pc.PID) {
			_ = os.Remove(filepath.Join(nd.DataDir, config.DefaultProcessContextFilename))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (pid %d) to die: %w", id, pc.PID, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// gone reports whether pid has exited. A node started by this process is
// its child: it stays a zombie (and looks alive to signal 0) until reaped,
// so reap it here.
func gone(pid int) bool {
	var ws syscall.WaitStatus
	wpid, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	switch {
	case wpid == pid:
		return true
	case errors.Is(err, syscall.ECHILD):
		// Not our child (started by another `schain` process): init reaps it.
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(stat), ") Z ")
	}
	return false
}

// StartNode (re)starts a stopped or killed node and waits until healthy.
func (n *Network) StartNode(ctx context.Context, id ids.NodeID) error {
	nd, err := n.node(id)
	if err != nil {
		return err
	}
	// Keep the node's ports across restarts, so clients and peers that knew
	// it find it again.
	for _, known := range n.Nodes {
		if known.NodeID != id {
			continue
		}
		if u, err := url.Parse(known.URI); err == nil && u.Port() != "" {
			nd.Flags[config.HTTPPortKey] = u.Port()
		}
	}
	if nd.StakingAddress.IsValid() {
		nd.Flags[config.StakingPortKey] = strconv.Itoa(int(nd.StakingAddress.Port()))
	}
	if err := n.tmp.StartNode(ctx, nd); err != nil {
		return err
	}
	if err := n.waitServing(ctx, nd); err != nil {
		return err
	}
	pc, _ := readProcess(nd)
	for i := range n.Nodes {
		if n.Nodes[i].NodeID == id {
			n.Nodes[i].URI, n.Nodes[i].PID, n.Nodes[i].StakingPort = nd.URI, pc.PID, pc.StakingAddress.Port()
		}
	}
	return nil
}
