package legacyraft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var (
	_ legacy.Allocator     = (*Node)(nil)
	_ legacy.WriteReporter = (*Node)(nil)
)

// mode is where a node's allocations are decided; the node adds validation
// and leader forwarding around it.
type mode interface {
	// allocate serves the request on this node or returns a
	// *legacy.NotLeaderError naming the leader; it never forwards.
	allocate(ctx context.Context, rangeKey string, count uint64) (legacy.Result, error)
	// reportWritten feeds a volume-heartbeat-like max written key.
	reportWritten(rangeKey string, maxWritten uint64) error
}

// Node is one member of an embedded legacy allocator cluster: its raft
// groups, its mode, and the HTTP forwarding to the leader. It is safe for
// concurrent use.
type Node struct {
	cfg    Config
	log    hclog.Logger
	groups []*group
	mode   mode
	routes router // ModeSlots only
	client *http.Client

	closeOnce sync.Once
	closeErr  error
}

// New validates cfg, opens (or creates and bootstraps) every raft group and
// starts serving allocations through raft. It does not listen for HTTP: use
// Handler or Serve.
func New(cfg Config, opts Options) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	n := &Node{cfg: cfg, log: logger(opts).Named(cfg.ID), client: &http.Client{Timeout: cfg.ForwardTimeout}}
	var err error
	switch cfg.Mode {
	case ModeSeaweedFS:
		err = n.startSeaweedFS(opts)
	case ModeReplicated:
		err = n.startCounters(opts, 1)
	case ModeSlots:
		n.routes.store(NewRouteTable(1, cfg.Groups))
		err = n.startCounters(opts, cfg.BatchMaxRecords)
	}
	if err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Node) startSeaweedFS(opts Options) error {
	m := &seaweedMode{node: n, fsm: &volumeFSM{}, seq: newSequencer()}
	g, err := startGroup(n.cfg, 0, m.fsm, opts, m.onLeader)
	if err != nil {
		return err
	}
	m.group = g
	n.groups, n.mode = []*group{g}, m
	return nil
}

// startCounters starts one counter group per configured group. Replicated
// mode proposes one allocation per entry (maxRecords 1), the naive baseline;
// slots mode batches.
func (n *Node) startCounters(opts Options, maxRecords int) error {
	groups := n.cfg.GroupCount()
	ownership := groups
	if n.cfg.Mode != ModeSlots {
		ownership = 0
	}
	for id := range groups {
		g, err := startGroup(n.cfg, id, newCounterFSM(id, ownership), opts, nil)
		if err != nil {
			return err
		}
		g.batcher = newBatcher(g.raft, n.cfg, maxRecords, func(err error) error { return n.classifyApply(g, err) })
		n.groups = append(n.groups, g)
	}
	n.mode = &counterMode{node: n}
	return nil
}

// ID returns this node's raft server id.
func (n *Node) ID() string { return n.cfg.ID }

// Config returns the validated configuration.
func (n *Node) Config() Config { return n.cfg }

// Allocate serves the allocation locally if this node leads the responsible
// group, and otherwise forwards it to the leader with a bounded timeout. If
// forwarding fails it returns a *legacy.NotLeaderError carrying the hint.
func (n *Node) Allocate(ctx context.Context, rangeKey string, count uint64) (legacy.Result, error) {
	res, _, err := n.allocateOrForward(ctx, rangeKey, count)
	return res, err
}

// allocateOrForward is Allocate, also returning the leader a forwarded
// request was served by ("" when this node served it).
func (n *Node) allocateOrForward(ctx context.Context, rangeKey string, count uint64) (legacy.Result, string, error) {
	res, err := n.AllocateLocal(ctx, rangeKey, count)
	leader, err := n.forward(ctx, err, func(ctx context.Context, addr string) (err error) {
		res, _, err = callAllocate(ctx, n.client, addr, rangeKey, count, true)
		return err
	})
	if err != nil {
		return legacy.Result{}, "", err
	}
	return res, leader, nil
}

// forward sends a request this node answered with err to the leader when
// err names one (another node): call carries it there, bounded by
// ForwardTimeout. It returns that leader, or err itself when there is
// nothing to forward; a failed forward is a *legacy.NotLeaderError carrying
// the hint.
func (n *Node) forward(ctx context.Context, err error, call func(ctx context.Context, addr string) error) (string, error) {
	var nl *legacy.NotLeaderError
	if !errors.As(err, &nl) || nl.LeaderHint == "" || nl.LeaderID == n.cfg.ID {
		return "", err
	}
	fctx, cancel := context.WithTimeout(ctx, n.cfg.ForwardTimeout)
	defer cancel()
	if ferr := call(fctx, nl.LeaderHint); ferr != nil {
		return "", &legacy.NotLeaderError{LeaderID: nl.LeaderID, LeaderHint: nl.LeaderHint, Cause: ferr}
	}
	return nl.LeaderHint, nil
}

// AllocateLocal serves the allocation only if this node leads the
// responsible group; otherwise it returns a *legacy.NotLeaderError or
// ErrNoLeader. Forwarded requests use it so they never bounce.
func (n *Node) AllocateLocal(ctx context.Context, rangeKey string, count uint64) (legacy.Result, error) {
	if rangeKey == "" {
		return legacy.Result{}, errBadRange
	}
	if count == 0 || count > n.cfg.MaxCount {
		return legacy.Result{}, fmt.Errorf("%w: %d not in [1,%d]", errBadCount, count, n.cfg.MaxCount)
	}
	return n.mode.allocate(ctx, rangeKey, count)
}

// ReportWritten feeds the highest key written for a range, like a volume
// server heartbeat, forwarding it to the leader when needed.
func (n *Node) ReportWritten(ctx context.Context, rangeKey string, maxWritten uint64) error {
	_, err := n.reportOrForward(ctx, rangeKey, maxWritten)
	return err
}

// reportOrForward is ReportWritten, also returning the leader a forwarded
// report went to ("" when this node applied it).
func (n *Node) reportOrForward(ctx context.Context, rangeKey string, maxWritten uint64) (string, error) {
	return n.forward(ctx, n.mode.reportWritten(rangeKey, maxWritten), func(ctx context.Context, addr string) error {
		_, err := callWritten(ctx, n.client, addr, rangeKey, maxWritten, true)
		return err
	})
}

// reportWrittenLocal applies a forwarded report without forwarding again.
func (n *Node) reportWrittenLocal(rangeKey string, maxWritten uint64) error {
	return n.mode.reportWritten(rangeKey, maxWritten)
}

// SetRoutes atomically replaces the slot route table (ModeSlots); requests
// already resolved keep the table they resolved under.
func (n *Node) SetRoutes(t *RouteTable) { n.routes.store(t) }

// Routes returns the current slot route table, nil outside ModeSlots.
func (n *Node) Routes() *RouteTable { return n.routes.load() }

// GroupOf returns the raft group serving rangeKey under the current routes.
func (n *Node) GroupOf(rangeKey string) (int, bool) {
	if t := n.routes.load(); t != nil {
		return t.Group(Slot(rangeKey))
	}
	return 0, true
}

// Raft exposes group g's raft instance to tests and operators (leadership
// transfer, snapshots); callers must not shut it down.
func (n *Node) Raft(g int) *raft.Raft { return n.groups[g].raft }

// Close shuts every group down; it is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		for _, g := range n.groups {
			errs = append(errs, g.shutdown())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// notLeader names group g's leader, or ErrNoLeader if none is known.
func (n *Node) notLeader(g *group) error {
	id := g.leader()
	if id == "" {
		return fmt.Errorf("group %d: %w", g.id, ErrNoLeader)
	}
	p, _ := n.cfg.peer(id)
	return &legacy.NotLeaderError{LeaderID: id, LeaderHint: p.HTTPAddr}
}

// classifyApply maps a failed raft Apply onto the legacy error classes.
func (n *Node) classifyApply(g *group, err error) error {
	switch {
	case isNotLeader(err):
		nerr := n.notLeader(g)
		var nl *legacy.NotLeaderError
		if errors.As(nerr, &nl) {
			nl.Cause = err
			return nl
		}
		return fmt.Errorf("%w: %w", nerr, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	default:
		return fmt.Errorf("group %d: %w: %w", g.id, legacy.ErrUnavailable, err)
	}
}

func logger(opts Options) hclog.Logger {
	if opts.Logger != nil {
		return opts.Logger
	}
	return hclog.New(&hclog.LoggerOptions{Name: "legacyraft", Level: hclog.Error, Output: os.Stderr, Exclude: shutdownNoise})
}

// shutdownNoise drops the one error raft's transport logs while it shuts
// down with a command in flight ("failed to decode incoming command",
// raft.ErrTransportShutdown): the end of a run, not a fault.
func shutdownNoise(_ hclog.Level, _ string, args ...any) bool {
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, raft.ErrTransportShutdown) {
			return true
		}
	}
	return false
}
