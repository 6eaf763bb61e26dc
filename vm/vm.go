// Package vm is S-Chain's Snowman ChainVM: validators build and verify blocks
// of owner-signed transactions against the validator set of the block's
// epoch, and commit each accepted block in one database batch.
package vm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/version"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/epochs"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// Version of this VM, reported to the node.
const Version = "v0.1.0"

var (
	// ErrNoWork is returned by BuildBlock when no pending transaction can go
	// into a block: S-Chain never builds empty blocks for nothing.
	ErrNoWork = errors.New("vm: nothing to build")
	// ErrNotReady means no epoch is known yet or its validator set is empty.
	ErrNotReady = errors.New("vm: not ready")
	// ErrNotInitialized is returned before Initialize.
	ErrNotInitialized = errors.New("vm: not initialized")
)

var (
	_ snowblock.ChainVM                         = (*VM)(nil)
	_ snowblock.BuildBlockWithContextChainVM    = (*VM)(nil)
	_ snowblock.SetPreferenceWithContextChainVM = (*VM)(nil)
)

// Config is what a VM needs from its node. Initialize fills it from the
// snow.Context; tests build it directly.
type Config struct {
	NetworkID  uint32
	ChainID    ids.ID
	SubnetID   ids.ID
	NodeID     ids.NodeID
	Signer     warp.Signer
	Validators epochs.Source
	// Clock is read only for the future-skew bound and build timestamps.
	Clock func() time.Time

	// Optional. Log defaults to no logging; Registerer to a private
	// registry. With Sender (and Peers for the subnet's validator list) the
	// VM gossips transactions.
	Log        logging.Logger
	Registerer prometheus.Registerer
	Sender     common.AppSender
	Peers      validators.State

	// ChainConfig is this node's API access control and limits. Initialize
	// always sets it from the node's chain config (defaults when empty: no
	// write token, so the write methods are disabled). Nil is only for a VM
	// run in-process (tests, embedding): no token is then required.
	ChainConfig *ChainConfig
	// Heartbeats makes the VM send its heartbeat a few times per liveness
	// epoch (Initialize sets it: a node always does). In-process users call
	// Heartbeat themselves.
	Heartbeats bool
}

// VM implements the ChainVM. The engine does not share a lock with a plugin
// over rpcchainvm, so the VM guards its own state with mu.
type VM struct {
	common.AppHandler

	cfg     Config
	genesis *Genesis
	state   *state.State
	epochs  *epochs.Cache
	// memberships caches the epochs of frozen memberships (see
	// Snapshot).
	memberships *memberships
	snapshots   snapshotCache
	pools       *pools
	sigs        *execute.SignatureCache
	mempool     *mempool.Mempool

	mu           sync.Mutex
	processing   map[ids.ID]*Block // verified, undecided
	lastAccepted *Block
	preferred    ids.ID
	epoch        uint64 // newest epoch seen in a block context
	haveEpoch    bool
	// openingWanted is set when a client asked for something that needs
	// an epoch before the chain has one: only then does the VM ask the engine
	// for the (empty) opening blocks. bootstrapTried stops WaitForEvent from
	// asking for opening blocks the builder cannot make (no proposer VM
	// context); it is reset on every accept.
	openingWanted  bool
	bootstrapTried bool
	// buildStalled is set when a build found nothing to include while
	// transactions were pending; WaitForEvent then waits for a change.
	buildStalled bool
	// repinWanted is set when a build skipped work pinned to a membership
	// no longer in force; the next accept re-pins it.
	repinWanted bool
	// inForce is the membership of the last accepted block: what this node
	// signs against (signingEpoch) and judges pending work by (dead).
	inForce *execute.Epoch
	// membershipWanted is set when a range waits to move to this node: the
	// next build opens the new membership even without work.
	membershipWanted bool
	nonce            uint64
	lastHeartbeat    *txs.Tx // the last heartbeat this node sent

	metrics       *metrics
	gate          *gate
	gossip        *gossiper
	tracker       *tracker
	intents       chan intent
	stop          context.CancelFunc
	lifetime      context.Context // ends at Shutdown
	committerDone chan struct{}
	background    sync.WaitGroup // re-pinning goroutines
}

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
	cc, err := ParseChainConfig(configBytes)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	if err := chainCtx.Metrics.Register("schain", reg); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	return vm.Init(Config{
		NetworkID:   chainCtx.NetworkID,
		ChainID:     chainCtx.ChainID,
		SubnetID:    chainCtx.SubnetID,
		NodeID:      chainCtx.NodeID,
		Signer:      chainCtx.WarpSigner,
		Validators:  chainCtx.ValidatorState,
		Clock:       time.Now,
		Log:         chainCtx.Log,
		Registerer:  reg,
		Sender:      appSender,
		Peers:       chainCtx.ValidatorState,
		ChainConfig: &cc,
		Heartbeats:  true,
	}, db, genesisBytes)
}

// Init opens state on db, creating the genesis block on first start and
// restoring the last accepted block on every later one.
func (vm *VM) Init(cfg Config, db database.Database, genesisBytes []byte) error {
	g, err := ParseGenesis(genesisBytes)
	if err != nil {
		return err
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
	if vm.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return err
	}
	if vm.gate, err = newGate(cfg.ChainConfig, cfg.Log, vm.metrics); err != nil {
		return err
	}
	vm.cfg, vm.genesis = cfg, g
	vm.epochs = epochs.NewCache(cfg.Validators, cfg.SubnetID, g.EpochCache)
	vm.memberships = newMemberships(g.EpochCache)
	vm.pools = newPools(g.poolChunk(), g.PoolRanges)
	vm.sigs = execute.NewSignatureCache(g.SignatureCache)
	vm.mempool = mempool.New(g.Mempool)
	vm.tracker = newTracker(g.TrackedTxs)
	vm.processing = map[ids.ID]*Block{}
	// Nonces only need to differ between this node's own transactions of one
	// epoch, including across restarts: start at a random point, so that
	// neither a clock stepped back nor a fixed clock repeats one.
	if vm.nonce, err = randomNonce(); err != nil {
		return err
	}
	if vm.state, err = state.New(db, g.TxLimits); err != nil {
		return err
	}
	vm.AppHandler = common.NewNoOpAppHandler(cfg.Log)
	last, err := vm.state.LastAccepted()
	switch {
	case errors.Is(err, state.ErrNotInitialized):
		err = vm.acceptGenesis(genesisBytes)
	case err == nil:
		var b *Block
		if b, err = vm.loadAccepted(last.ID); err != nil {
			err = fmt.Errorf("restoring last accepted block %s: %w", last.ID, err)
			break
		}
		vm.lastAccepted, vm.preferred = b, b.ID()
		vm.noteEpoch(b)
		if b.HasEpoch {
			if vm.inForce, err = vm.acceptedSnapshot(context.Background()); err != nil {
				err = fmt.Errorf("restoring the membership in force: %w", err)
			}
		}
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	vm.stop, vm.lifetime = cancel, ctx
	vm.intents = make(chan intent, 4*g.GroupCommitMaxEntries)
	vm.committerDone = make(chan struct{})
	go vm.runCommitter(ctx)
	if cfg.Heartbeats {
		vm.background.Add(1)
		go vm.runHeartbeats(ctx, heartbeatInterval(g.EpochDurationMs))
	}
	if cfg.Sender != nil && cfg.Peers != nil {
		if err := vm.startGossip(ctx, cfg.Log, cfg.Sender, cfg.Peers, cfg.Registerer); err != nil {
			return err
		}
	}
	return nil
}

func (vm *VM) acceptGenesis(genesisBytes []byte) error {
	layer, err := vm.state.NewLayer(nil)
	if err != nil {
		return err
	}
	root, err := layer.Seal()
	if err != nil {
		return err
	}
	blk, err := block.New(sha256.Sum256(genesisBytes), 0, vm.genesis.Timestamp, false, 0, root, nil, vm.genesis.BlockLimits)
	if err != nil {
		return err
	}
	if err := vm.state.Accept(layer, blk.ID(), blk.Bytes()); err != nil {
		return err
	}
	vm.lastAccepted = &Block{Block: blk, vm: vm, accepted: true}
	vm.preferred = blk.ID()
	return nil
}

func (vm *VM) loadAccepted(id ids.ID) (*Block, error) {
	b, err := vm.state.Block(id)
	if err != nil {
		return nil, err
	}
	blk, err := block.Parse(b, vm.genesis.BlockLimits, vm.genesis.TxLimits)
	if err != nil {
		return nil, err
	}
	return &Block{Block: blk, vm: vm, accepted: true}, nil
}

// chainBlock finds a processing block, the last accepted one, or an older
// accepted one. Called with vm.mu held.
func (vm *VM) chainBlock(id ids.ID) (*Block, bool) {
	if b, ok := vm.processing[id]; ok {
		return b, true
	}
	if vm.lastAccepted != nil && vm.lastAccepted.ID() == id {
		return vm.lastAccepted, true
	}
	b, err := vm.loadAccepted(id)
	return b, err == nil
}

// SetState is a no-op: S-Chain has no state sync or bootstrapping phase of
// its own.
func (*VM) SetState(context.Context, snow.State) error { return nil }

// Shutdown stops the group committer and waits for background re-pinning.
func (vm *VM) Shutdown(context.Context) error {
	if vm.stop == nil {
		return nil
	}
	vm.stop()
	<-vm.committerDone
	vm.background.Wait()
	return nil
}

// Version reports the VM's semantic version.
func (*VM) Version(context.Context) (string, error) { return Version, nil }

// CreateHandlers serves the JSON-RPC API at /ext/bc/<chainID>.
func (vm *VM) CreateHandlers(context.Context) (map[string]http.Handler, error) {
	h, err := vm.Handler()
	if err != nil {
		return nil, err
	}
	return map[string]http.Handler{"": h}, nil
}

// NewHTTPHandler has no header-routed handler.
func (*VM) NewHTTPHandler(context.Context) (http.Handler, error) { return nil, nil }

// ErrUnhealthy is what HealthCheck reports, with the reason, when this node
// cannot do its job: no epoch is open yet, or it is a validator whose
// heartbeats are not landing, so its ranges are about to move.
var ErrUnhealthy = errors.New("vm: unhealthy")

// HealthCheck reports the last accepted height and pending work, and fails
// with ErrUnhealthy and the reason while no epoch is open, or while this
// node is in the P-chain set but no heartbeat of it landed in the previous
// liveness epoch (with K=1 its ranges move at the next one).
func (vm *VM) HealthCheck(context.Context) (interface{}, error) {
	vm.mu.Lock()
	if vm.lastAccepted == nil {
		vm.mu.Unlock()
		return nil, ErrNotInitialized
	}
	inForce := vm.inForce
	details := map[string]any{"lastAcceptedHeight": vm.lastAccepted.Block.Height, "mempool": vm.mempool.Len()}
	vm.mu.Unlock()
	if inForce == nil {
		return details, fmt.Errorf("%w: no epoch open yet (the chain opens one at the first request that needs it)", ErrUnhealthy)
	}
	if _, validator := inForce.PublicKey(vm.cfg.NodeID); !validator {
		return details, nil
	}
	rec, known, err := vm.state.Accepted().Liveness(vm.cfg.NodeID)
	if err != nil {
		return details, err
	}
	landed := rec.FirstSeen
	if rec.HasHeartbeat {
		landed = max(landed, rec.Heartbeat)
	}
	round := vm.currentRound()
	details["lastHeartbeatEpoch"], details["epoch"] = landed, round
	if known && round > landed+1 {
		return details, fmt.Errorf("%w: no heartbeat of this validator landed since liveness epoch %d (now %d): its ranges move once it is %d epochs behind (check its clock, its connectivity to the other validators and the log's \"heartbeat not sent\" warnings)",
			ErrUnhealthy, landed, round, vm.genesis.LivenessEpochs+1)
	}
	return details, nil
}

// Connected tells gossip about a peer.
func (vm *VM) Connected(ctx context.Context, nodeID ids.NodeID, v *version.Application) error {
	if vm.gossip == nil {
		return nil
	}
	return vm.gossip.network.Connected(ctx, nodeID, v)
}

// Disconnected tells gossip a peer left.
func (vm *VM) Disconnected(ctx context.Context, nodeID ids.NodeID) error {
	if vm.gossip == nil {
		return nil
	}
	return vm.gossip.network.Disconnected(ctx, nodeID)
}

// WaitForEvent returns PendingTxs when the mempool holds transactions, or
// while the chain has not opened its first epoch (no block with a P-chain
// context yet), so that the engine builds the opening blocks.
//
// It is level-triggered: while transactions are pending it keeps reporting
// them, because a build attempt can fail above the VM (the proposer VM's
// slot checks) after the event was consumed. When the VM's own last build
// found nothing to include (work pinned to an epoch the chain has not
// reached, or already in a processing block), it waits for a change (a new
// transaction, a decided block) or for retryBuild, so the engine neither
// spins nor stalls.
func (vm *VM) WaitForEvent(ctx context.Context) (common.Message, error) {
	for {
		changed := vm.tracker.wait()
		if vm.needsOpening() {
			return common.PendingTxs, nil
		}
		vm.mu.Lock()
		stalled := vm.buildStalled
		vm.mu.Unlock()
		if vm.mempool.Len() > 0 && !stalled {
			return common.PendingTxs, nil
		}
		timer := time.NewTimer(retryBuild)
		retry := timer.C
		if vm.mempool.Len() == 0 {
			retry = nil // nothing to retry: wait for a transaction
		}
		select {
		case <-vm.mempool.Pending():
			timer.Stop()
			vm.setStalled(false)
			return common.PendingTxs, nil
		case <-changed:
			timer.Stop()
			vm.setStalled(false)
		case <-retry:
			vm.setStalled(false)
			return common.PendingTxs, nil
		case <-ctx.Done():
			timer.Stop()
			return 0, ctx.Err()
		}
	}
}

// retryBuild is how often pending work that could not go into the last
// block is offered to the engine again.
const retryBuild = time.Second

func (vm *VM) setStalled(v bool) {
	vm.mu.Lock()
	vm.buildStalled = v
	vm.mu.Unlock()
}

func (vm *VM) needsOpening() bool {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if len(vm.processing) != 0 {
		return false
	}
	return (vm.openingWanted && !vm.lastAccepted.HasEpoch && !vm.bootstrapTried) || vm.membershipWanted
}

// errNoEpoch records that a client is waiting for the first epoch and wakes
// WaitForEvent so the engine builds the opening blocks; the client retries
// on NotReady.
func (vm *VM) errNoEpoch() error {
	vm.mu.Lock()
	vm.openingWanted = true
	vm.mu.Unlock()
	vm.tracker.wake()
	return fmt.Errorf("%w: the chain has not opened its first epoch yet (it is doing so now; retry shortly)", ErrNotReady)
}

// ParseBlock returns the known instance for a known block: the rpcchainvm
// server re-parses before Verify, and state lives on the instance.
func (vm *VM) ParseBlock(_ context.Context, b []byte) (snowman.Block, error) {
	id := ids.ID(sha256.Sum256(b))
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if known, ok := vm.processing[id]; ok {
		return known, nil
	}
	if vm.lastAccepted.ID() == id {
		return vm.lastAccepted, nil
	}
	blk, err := block.Parse(b, vm.genesis.BlockLimits, vm.genesis.TxLimits)
	if err != nil {
		return nil, err
	}
	if has, _ := vm.state.Block(id); has != nil {
		return &Block{Block: blk, vm: vm, accepted: true}, nil
	}
	return &Block{Block: blk, vm: vm}, nil
}

// GetBlock returns a processing or accepted block.
func (vm *VM) GetBlock(_ context.Context, id ids.ID) (snowman.Block, error) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if b, ok := vm.chainBlock(id); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w: block %s", database.ErrNotFound, id)
}

// SetPreference records where the next block goes.
func (vm *VM) SetPreference(_ context.Context, id ids.ID) error {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vm.preferred = id
	return nil
}

// SetPreferenceWithContext also learns the newest epoch.
func (vm *VM) SetPreferenceWithContext(ctx context.Context, id ids.ID, bctx *snowblock.Context) error {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vm.preferred = id
	if bctx != nil {
		vm.seeEpoch(bctx.PChainHeight)
	}
	return nil
}

// LastAccepted is the restored or newest accepted block.
func (vm *VM) LastAccepted(context.Context) (ids.ID, error) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.lastAccepted.ID(), nil
}

// GetBlockIDAtHeight reads the height index.
func (vm *VM) GetBlockIDAtHeight(_ context.Context, h uint64) (ids.ID, error) {
	id, err := vm.state.BlockIDAtHeight(h)
	if errors.Is(err, state.ErrNotFound) {
		return ids.Empty, fmt.Errorf("%w: height %d", database.ErrNotFound, h)
	}
	return id, err
}

// State gives read access to accepted state (for APIs).
func (vm *VM) State() state.Reader { return vm.state.Accepted() }

// Mempool exposes pending transactions (for APIs and gossip).
func (vm *VM) Mempool() *mempool.Mempool { return vm.mempool }

// CurrentEpoch is the newest epoch (P-chain height) this node has seen in a
// block context: what new transactions are pinned to.
func (vm *VM) CurrentEpoch() (uint64, bool) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.epoch, vm.haveEpoch
}

func (vm *VM) noteEpoch(b *Block) {
	if b.HasEpoch {
		vm.seeEpoch(b.Epoch)
	}
}

func (vm *VM) seeEpoch(e uint64) {
	if !vm.haveEpoch || e > vm.epoch {
		vm.epoch, vm.haveEpoch = e, true
		vm.metrics.epoch.Set(float64(e))
	}
}

func randomNonce() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("drawing a nonce: %w", err)
	}
	return binary.BigEndian.Uint64(b[:]) >> 1, nil // half the space above it is left for increments
}
