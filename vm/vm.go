// Package vm is S-Chain's Snowman ChainVM. It only wires the parts, each in
// its own package, and answers the engine by delegating to them:
//
//   - config: the genesis and the node's chain config;
//   - chain: blocks over state layers, Verify, Accept, Reject, the
//     membership in force (one lock for all chain state);
//   - builder: when to build a block and what goes into it;
//   - writer: the owner's write path (signing, admission, group commit,
//     pools, re-pinning, heartbeats, receipts);
//   - gossip: transactions to and from the other validators;
//   - certifier: finality certificates (signing accepted blocks for the
//     other validators, collecting their signatures), and the one ACP-118
//     handler, which also routes other messages to their rules;
//   - manager: S-Chain as its L1's validator manager (the manager
//     address, removal messages, and the rule for signing a removal the
//     accepted state decided, routed to by the certifier's handler);
//   - rpc: the JSON-RPC API and its access gate.
//
// Dependencies point one way: rpc uses writer and chain; writer and
// builder use chain and mempool; gossip knows only the mempool and an
// Admitter (the writer, behind an interface); certifier knows only blocks
// and certificates (the chain reaches it through this package, and the
// manager's rule through certifier.Rule); manager reads the accepted state
// and this node's peers; chain uses
// config and the pure core (state, execute, pinning, txs).
// docs/internals/architecture.md draws it.
package vm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/network/p2p/acp118"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/version"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/internal/cpuprofile"
	"github.com/s-chain/schain/internal/dbcache"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/vm/builder"
	"github.com/s-chain/schain/vm/certifier"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/gossip"
	"github.com/s-chain/schain/vm/manager"
	"github.com/s-chain/schain/vm/mempool"
	"github.com/s-chain/schain/vm/rpc"
	"github.com/s-chain/schain/vm/writer"
)

// Version of this VM, reported to the node.
const Version = "v0.2.0"

// ID is S-Chain's fixed VM ID: the plugin binary must be named ID.String()
// (CB58) in the node's plugin directory, and subnets create chains with it.
var ID = ids.ID{'s', 'c', 'h', 'a', 'i', 'n', '-', 'v', 'm'}

// ErrNotInitialized is returned before Initialize.
var ErrNotInitialized = errors.New("vm: not initialized")

var (
	_ snowblock.ChainVM                         = (*VM)(nil)
	_ snowblock.BuildBlockWithContextChainVM    = (*VM)(nil)
	_ snowblock.SetPreferenceWithContextChainVM = (*VM)(nil)
	_ chain.Listener                            = (*VM)(nil)
)

// Config is what a VM needs from its node. Initialize fills it from the
// snow.Context; tests build it directly.
type Config struct {
	NetworkID  uint32
	ChainID    ids.ID
	SubnetID   ids.ID
	NodeID     ids.NodeID
	Signer     warp.Signer
	Validators chain.Source
	// Clock is read only for the future-skew bound and build timestamps.
	Clock func() time.Time

	// Optional. Log defaults to no logging; Registerer to a private
	// registry. With Sender (and Peers for the subnet's validator list) the
	// VM gossips transactions.
	Log        logging.Logger
	Registerer prometheus.Registerer
	Sender     common.AppSender
	Peers      validators.State
	// CurrentValidators is the P-chain's current validator set of the
	// subnet, which the removal rule maps validation IDs to nodes and
	// nonces with (Initialize sets it; nil: Peers when set, else this node
	// signs no removal).
	CurrentValidators manager.CurrentValidators

	// ChainConfig is this node's API access control and limits. Initialize
	// always sets it from the node's chain config (defaults when empty: no
	// write token, so the write methods are disabled). Nil is only for a VM
	// run in-process (tests, embedding): no token is then required.
	ChainConfig *config.ChainConfig
	// Heartbeats makes the VM send its heartbeat a few times per liveness
	// round (Initialize sets it: a node always does). In-process users call
	// Writer().Heartbeat themselves.
	Heartbeats bool
	// Bootstrapping starts the API answering NotReady until SetState says
	// normal operation (Initialize sets it: avalanchego bootstraps every
	// chain it starts). In-process users start ready.
	Bootstrapping bool
}

// VM implements the ChainVM by delegating to its parts. The engine does
// not share a lock with a plugin over rpcchainvm: each part guards its own
// state.
type VM struct {
	common.AppHandler

	cfg     Config
	genesis *config.Genesis
	mempool *mempool.Mempool
	chain   *chain.Chain
	builder *builder.Builder
	writer  *writer.Writer
	gossip  *gossip.Gossip
	network *p2p.Network // nil without a sender: gossip and signature requests ride on it
	// certifier is set before the chain accepts its first block after
	// Init: the chain's listener reaches it.
	certifier *certifier.Certifier
	// manager is the rule for signing removals; connected the nodes this
	// node is connected to now (Connected, Disconnected), its witness of
	// who is alive.
	manager   *manager.Rule
	connected *p2p.Peers
	api       *rpc.Server
	stop      context.CancelFunc
	profiler  *cpuprofile.Profiler // nil unless the chain config asks for CPU profiles
}

// dbCacheEntries bounds the keys of accepted state kept in memory (values
// above dbcache.MaxValueBytes are never kept: at most 64 MiB, in practice a
// few: counters, replay entries, receipts, memberships).
const dbCacheEntries = 16384

// Initialize is the node's entry point.
func (vm *VM) Initialize(
	_ context.Context,
	chainCtx *snow.Context,
	db database.Database,
	genesisBytes []byte,
	_ []byte,
	configBytes []byte,
	_ []*common.Fx,
	appSender common.AppSender,
) error {
	cc, err := config.ParseChainConfig(configBytes)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	if err := chainCtx.Metrics.Register("schain", reg); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if cc.CPUProfileDir != "" {
		// The plugin's own process: the node's profiler does not see it.
		if vm.profiler, err = cpuprofile.Start(cpuprofile.Config{
			Dir: cc.CPUProfileDir, Prefix: chainCtx.NodeID.String(),
			Every: cc.CPUProfileEvery(), MaxFiles: cc.CPUProfileMaxFiles,
		}); err != nil {
			return err
		}
		chainCtx.Log.Info("writing CPU profiles of the plugin", zap.String("dir", cc.CPUProfileDir))
	}
	err = vm.Init(Config{
		NetworkID:         chainCtx.NetworkID,
		ChainID:           chainCtx.ChainID,
		SubnetID:          chainCtx.SubnetID,
		NodeID:            chainCtx.NodeID,
		Signer:            chainCtx.WarpSigner,
		Validators:        chainCtx.ValidatorState,
		Clock:             time.Now,
		Log:               chainCtx.Log,
		Registerer:        reg,
		Sender:            appSender,
		Peers:             chainCtx.ValidatorState,
		ChainConfig:       &cc,
		CurrentValidators: chainCtx.ValidatorState,
		Heartbeats:        true,
		Bootstrapping:     true,
	}, db, genesisBytes)
	if err != nil && vm.profiler != nil {
		_ = vm.profiler.Stop()
		vm.profiler = nil
	}
	return err
}

// Init builds the parts on db, creating the genesis block on first start
// and restoring the last accepted block on every later one.
func (vm *VM) Init(cfg Config, db database.Database, genesisBytes []byte) error {
	g, err := config.ParseGenesis(genesisBytes)
	if err != nil {
		return err
	}
	if cfg.ChainConfig != nil {
		if g.Upgrades, err = g.Upgrades.Overlay(cfg.ChainConfig.Upgrades); err != nil {
			return err
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = logging.NoLog{}
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	vm.cfg, vm.genesis = cfg, g
	// Every part reads and writes through the cache (it must see every
	// write): a plugin's database is the node's, one gRPC round trip per
	// read, and Verify, building and admission re-read the same keys.
	cached := dbcache.New(db, dbCacheEntries)
	scan := cached.Track(state.NewKeyPrefixes()...)
	go func() { // a large state takes a while; reads ask the database until it is done
		began := cfg.Clock()
		keys, err := scan()
		if err != nil {
			cfg.Log.Warn("reading the keys of objects and chunks failed: absent ones are read from the node", zap.Int("keys", keys), zap.Error(err))
			return
		}
		cfg.Log.Info("read the keys of objects and chunks", zap.Int("keys", keys), zap.Duration("took", cfg.Clock().Sub(began)))
	}()
	db = cached
	vm.mempool = mempool.New(g.Mempool)
	vm.AppHandler = common.NewNoOpAppHandler(cfg.Log)
	if vm.chain, err = chain.New(chain.Config{
		NetworkID: cfg.NetworkID, ChainID: cfg.ChainID, SubnetID: cfg.SubnetID,
		Genesis: g, Validators: cfg.Validators, Clock: cfg.Clock, Log: cfg.Log,
		Registerer: cfg.Registerer, Listener: vm,
		OnNoMembership: func() { vm.builder.WantOpening() },
	}, db, genesisBytes); err != nil {
		return err
	}
	if vm.writer, err = writer.New(writer.Config{
		NetworkID: cfg.NetworkID, ChainID: cfg.ChainID, NodeID: cfg.NodeID, Signer: cfg.Signer,
		Genesis: g, Signatures: vm.chain.Signatures(), Clock: clock.WithNow(cfg.Clock), Log: cfg.Log, Registerer: cfg.Registerer, Heartbeats: cfg.Heartbeats,
	}, vm.chain, vm.mempool, builds{vm}); err != nil {
		return err
	}
	if vm.builder, err = builder.New(vm.chain, vm.chain, vm.mempool, vm.writer, cfg.Registerer, nil); err != nil {
		return err
	}
	vm.builder.Pace(cfg.ChainConfig.PipelineInterval())
	current := cfg.CurrentValidators
	if current == nil && cfg.Peers != nil {
		current = cfg.Peers
	}
	vm.connected = &p2p.Peers{}
	vm.manager = manager.New(manager.Config{
		NetworkID: cfg.NetworkID, ChainID: cfg.ChainID, SubnetID: cfg.SubnetID, NodeID: cfg.NodeID,
		Validators: current, Decisions: vm.chain.State(), Peers: vm.connected,
	})
	if vm.certifier, err = certifier.New(certifier.Config{
		NetworkID: cfg.NetworkID, ChainID: cfg.ChainID, SubnetID: cfg.SubnetID, NodeID: cfg.NodeID,
		Signer: cfg.Signer, Validators: cfg.Validators, Clock: cfg.Clock, Log: cfg.Log,
		Registerer: cfg.Registerer, StallAfter: cfg.ChainConfig.CertificateStallAfter(),
		Off: cfg.ChainConfig.CertificatesOff(), Rules: []certifier.Rule{vm.manager},
	}, db, vm.chain, vm.chain.LastAccepted().Block); err != nil {
		return err
	}
	if vm.api, err = rpc.New(rpc.Config{
		NodeID: cfg.NodeID, NetworkID: cfg.NetworkID, ChainID: cfg.ChainID, Genesis: g,
		ChainConfig: cfg.ChainConfig, Log: cfg.Log, Registerer: cfg.Registerer,
	}, vm.chain, vm.writer, vm.certifier); err != nil {
		return err
	}
	vm.api.SetBootstrapping(cfg.Bootstrapping)
	ctx, cancel := context.WithCancel(context.Background())
	vm.stop = cancel
	var (
		requester certifier.Requester
		gossiper  certifier.Gossiper
	)
	if cfg.Sender != nil && cfg.Peers != nil {
		peers := p2p.NewValidators(cfg.Log, cfg.SubnetID, cfg.Peers, time.Minute)
		network, err := p2p.NewNetwork(cfg.Log, cfg.Sender, cfg.Registerer, "p2p", peers)
		if err != nil {
			cancel()
			return fmt.Errorf("p2p network: %w", err)
		}
		if vm.gossip, err = gossip.New(gossip.Config{
			NodeID: cfg.NodeID, Limits: g.TxLimits, Log: cfg.Log,
			Registerer: cfg.Registerer, Network: network, Peers: peers,
		}, vm.writer, vm.mempool); err != nil {
			cancel()
			return err
		}
		if err := network.AddHandler(acp118.HandlerID, vm.certifier.Handler()); err != nil {
			cancel()
			return err
		}
		if err := network.AddHandler(certifier.PushHandlerID, vm.certifier.PushHandler()); err != nil {
			cancel()
			return err
		}
		vm.network, vm.AppHandler = network, network
		requester = network.NewClient(acp118.HandlerID, peers)
		gossiper = network.NewClient(certifier.PushHandlerID, peers)
		vm.writer.UseGossip(vm.gossip)
		vm.gossip.Run(ctx, cfg.Log)
	}
	vm.certifier.Start(requester, gossiper)
	vm.writer.Start()
	if err := vm.api.ServeDirect(); err != nil {
		// Undo what started; the node will not call Shutdown on a chain
		// that failed to initialize, and a second one finds nothing to do.
		_ = vm.Shutdown(context.Background())
		vm.stop = nil
		return err
	}
	vm.logStart()
	return nil
}

// builds hands the writer the builder, which exists only after the writer.
type builds struct{ vm *VM }

func (b builds) WantMembership() { b.vm.builder.WantMembership() }

// logStart says what this chain runs with, once.
func (vm *VM) logStart() {
	g := vm.genesis
	last := vm.chain.LastAccepted()
	vm.cfg.Log.Info("schain started",
		zap.String("version", Version), zap.Stringer("nodeID", vm.cfg.NodeID),
		zap.Uint64("lastAcceptedHeight", last.Block.Height),
		zap.Uint64("roundDurationMs", g.RoundDurationMs), zap.Uint64("livenessRounds", g.LivenessRounds),
		zap.Uint64("txLifetimeRounds", g.TxLifetimeRounds), zap.Uint64("maxTimeSkewMs", g.MaxTimeSkewMs),
		zap.Uint64("poolChunk", g.PoolChunkOrDefault()), zap.Int("mempoolMaxTxs", g.Mempool.MaxTxs),
		zap.Bool("gossip", vm.gossip != nil), zap.Bool("heartbeats", vm.cfg.Heartbeats),
		zap.Strings("upgrades", g.Upgrades.Schedule()),
	)
}

// Accepted is the chain's listener: the write path and the builder learn
// of an accepted block.
func (vm *VM) Accepted(b *chain.Block, inForce *execute.Membership, changed bool) {
	vm.writer.Accepted(b, inForce, changed)
	vm.builder.Accepted(changed, b.Moved())
	vm.certifier.Accepted(b.Block)
}

// Rejected is the chain's listener for a rejected block.
func (vm *VM) Rejected(b *chain.Block) {
	vm.writer.Rejected(b)
	vm.builder.Wake()
}

// Chain, Builder, Writer and Mempool are the VM's parts, for in-process
// users (tests, tools) that drive them directly.
func (vm *VM) Chain() *chain.Chain             { return vm.chain }
func (vm *VM) Builder() *builder.Builder       { return vm.builder }
func (vm *VM) Writer() *writer.Writer          { return vm.writer }
func (vm *VM) Mempool() *mempool.Mempool       { return vm.mempool }
func (vm *VM) Certifier() *certifier.Certifier { return vm.certifier }
func (vm *VM) Manager() *manager.Rule          { return vm.manager }
func (vm *VM) Genesis() *config.Genesis        { return vm.genesis }
func (vm *VM) Handler() (http.Handler, error)  { return vm.api.Handler(), nil }

// SetState learns avalanchego's phase for this chain: until normal
// operation (while it bootstraps the chain, a node restarted from an old
// copy of its database included), the API answers NotReady ("bootstrapping")
// instead of answering from accepted state that may be far behind.
// S-Chain has no state sync of its own.
func (vm *VM) SetState(_ context.Context, st snow.State) error {
	if vm.api != nil {
		vm.api.SetBootstrapping(st != snow.NormalOp)
	}
	return nil
}

// Shutdown stops the write path, gossip and the CPU profiler.
func (vm *VM) Shutdown(context.Context) error {
	var perr error
	if vm.profiler != nil {
		perr = vm.profiler.Stop()
		vm.profiler = nil
	}
	if vm.stop == nil {
		return perr
	}
	vm.stop()
	// The direct API closes first: no request should find the writer gone.
	derr := vm.api.Close()
	vm.writer.Stop()
	vm.certifier.Stop()
	if vm.gossip != nil {
		vm.gossip.Wait()
	}
	return errors.Join(perr, derr)
}

// Version reports the VM's semantic version.
func (*VM) Version(context.Context) (string, error) { return Version, nil }

// CreateHandlers serves the JSON-RPC API at /ext/bc/<chainID>.
func (vm *VM) CreateHandlers(context.Context) (map[string]http.Handler, error) {
	if vm.api == nil {
		return nil, ErrNotInitialized
	}
	return map[string]http.Handler{"": vm.api.Handler()}, nil
}

// NewHTTPHandler has no header-routed handler.
func (*VM) NewHTTPHandler(context.Context) (http.Handler, error) { return nil, nil }

// Connected tells the removal rule and the p2p network about a peer.
func (vm *VM) Connected(ctx context.Context, nodeID ids.NodeID, v *version.Application) error {
	if vm.connected != nil {
		vm.connected.Connected(nodeID)
	}
	if vm.network == nil {
		return nil
	}
	return vm.network.Connected(ctx, nodeID, v)
}

// Disconnected tells the removal rule and the p2p network a peer left.
func (vm *VM) Disconnected(ctx context.Context, nodeID ids.NodeID) error {
	if vm.connected != nil {
		vm.connected.Disconnected(nodeID)
	}
	if vm.network == nil {
		return nil
	}
	return vm.network.Disconnected(ctx, nodeID)
}

// WaitForEvent is the builder's.
func (vm *VM) WaitForEvent(ctx context.Context) (common.Message, error) {
	return vm.builder.WaitForEvent(ctx)
}

// BuildBlock is the builder's.
func (vm *VM) BuildBlock(ctx context.Context) (snowman.Block, error) {
	return vm.builder.BuildBlock(ctx)
}

// BuildBlockWithContext is the builder's.
func (vm *VM) BuildBlockWithContext(ctx context.Context, bctx *snowblock.Context) (snowman.Block, error) {
	return vm.builder.BuildBlockWithContext(ctx, bctx)
}

// ParseBlock is the chain's.
func (vm *VM) ParseBlock(ctx context.Context, b []byte) (snowman.Block, error) {
	return vm.chain.ParseBlock(ctx, b)
}

// GetBlock is the chain's.
func (vm *VM) GetBlock(ctx context.Context, id ids.ID) (snowman.Block, error) {
	return vm.chain.GetBlock(ctx, id)
}

// SetPreference is the chain's.
func (vm *VM) SetPreference(_ context.Context, id ids.ID) error {
	vm.chain.SetPreference(id)
	return nil
}

// SetPreferenceWithContext also learns the newest P-chain height.
func (vm *VM) SetPreferenceWithContext(_ context.Context, id ids.ID, bctx *snowblock.Context) error {
	vm.chain.SetPreference(id)
	if bctx != nil {
		vm.chain.SeeHeight(bctx.PChainHeight)
	}
	return nil
}

// LastAccepted is the chain's.
func (vm *VM) LastAccepted(context.Context) (ids.ID, error) {
	return vm.chain.LastAccepted().ID(), nil
}

// GetBlockIDAtHeight is the chain's.
func (vm *VM) GetBlockIDAtHeight(_ context.Context, h uint64) (ids.ID, error) {
	return vm.chain.GetBlockIDAtHeight(h)
}

// HealthCheck reports the last accepted height, pending work and
// finality progress, and fails with the reason while the write path is
// unhealthy (writer.Writer.Health: no membership open yet, or this
// validator's heartbeats are not landing) or finality certificates stall
// (certifier.ErrStalled).
func (vm *VM) HealthCheck(context.Context) (interface{}, error) {
	if vm.chain == nil {
		return nil, ErrNotInitialized
	}
	details, err := vm.writer.Health()
	finality, ferr := vm.certifier.Health()
	details["finality"] = finality
	return details, errors.Join(err, ferr)
}
