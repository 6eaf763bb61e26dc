// Package legacyraft is an embedded stand-in for the legacy allocator: a
// SeaweedFS-master-like id service on hashicorp/raft, runnable in-process for
// tests and as separate 127.0.0.1 processes for benchmarks.
//
// Three modes exist because the shadow comparison needs all three baselines:
// ModeSeaweedFS reproduces the real master's non-durable file-key sequencer
// (and therefore its reissue after a leader change), ModeReplicated keeps the
// counter in the raft FSM, and ModeSlots partitions ranges over 256 hash slots
// mapped onto several raft groups, following slot_metadata_layer.md.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package legacyraft

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Mode selects where the per-range counter lives.
type Mode string

const (
	// ModeSeaweedFS replicates only the max volume id through raft; file keys
	// come from the leader's in-memory sequencer, as in the SeaweedFS master.
	ModeSeaweedFS Mode = "seaweedfs"
	// ModeReplicated keeps every range counter in one raft group's FSM.
	ModeReplicated Mode = "replicated"
	// ModeSlots keeps range counters in the FSMs of Groups raft groups, routed
	// by CRC32(range) % 256 through a versioned route table.
	ModeSlots Mode = "slots"
)

var (
	errNoID          = errors.New("node id is empty")
	errBadMode       = errors.New("unknown mode")
	errNotLoopback   = errors.New("address must be on 127.0.0.1 or in 198.18.0.0/15")
	errNoSelf        = errors.New("peers must include this node")
	errDuplicatePeer = errors.New("duplicate peer id")
	errBadGroups     = errors.New("groups out of range")
	errBadDuration   = errors.New("duration must be positive")
	errBadBatch      = errors.New("batch limits must be positive")
)

// Peer is one voter of the cluster. Every node lists every voter, itself
// included, identically.
type Peer struct {
	// ID is the raft server id; it is also the leader name in results.
	ID string `json:"id"`
	// RaftAddr is the raft transport address of group 0; group g uses the
	// same host with port+g.
	RaftAddr string `json:"raft-addr"`
	// HTTPAddr is the API address used for leader forwarding and hints.
	HTTPAddr string `json:"http-addr"`
}

// Config configures one node. Zero values are not defaults: start from
// DefaultConfig and override.
type Config struct {
	// ID is this node's raft server id; it must appear in Peers.
	ID string `json:"id"`
	// Dir holds boltdb logs and snapshots per group; empty keeps raft state
	// in memory (tests only: a restart loses it).
	Dir string `json:"dir"`
	// Bind is the raft bind address of group 0 (127.0.0.1 only).
	Bind string `json:"bind"`
	// HTTPBind is the API address served by Serve (127.0.0.1 only).
	HTTPBind string `json:"http-bind"`
	// Peers are all voters, this node included.
	Peers []Peer `json:"peers"`
	// Mode selects the counter placement.
	Mode Mode `json:"mode"`
	// Groups is the number of raft groups in ModeSlots (1..256); other modes
	// use exactly one group.
	Groups int `json:"groups"`
	// WarmUp is how long a new ModeSeaweedFS leader answers unavailable
	// (the real master: about 15 s, while volume servers re-register).
	WarmUp time.Duration `json:"warm-up"`
	// ForwardTimeout bounds a follower's forwarded request to the leader.
	ForwardTimeout time.Duration `json:"forward-timeout"`
	// ApplyTimeout bounds one raft Apply, queueing included.
	ApplyTimeout time.Duration `json:"apply-timeout"`
	// BatchMaxRecords caps the allocations carried by one raft log entry.
	BatchMaxRecords int `json:"batch-max-records"`
	// BatchMaxWait is how long a batch waits for more records once it has one.
	BatchMaxWait time.Duration `json:"batch-max-wait"`
	// QueueDepth bounds pending allocations per group; beyond it callers get
	// ErrUnavailable instead of an unbounded queue.
	QueueDepth int `json:"queue-depth"`
	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout are passed to
	// raft; tests shorten them for fast failover.
	HeartbeatTimeout   time.Duration `json:"heartbeat-timeout"`
	ElectionTimeout    time.Duration `json:"election-timeout"`
	LeaderLeaseTimeout time.Duration `json:"leader-lease-timeout"`
	// MaxCount caps one request's count; larger requests are rejected.
	MaxCount uint64 `json:"max-count"`
}

// DefaultConfig returns a single-node seaweedfs-mode configuration on
// loopback with a short warm-up suited to tests.
func DefaultConfig() Config {
	return Config{
		ID:                 "node1",
		Bind:               "127.0.0.1:9333",
		HTTPBind:           "127.0.0.1:9334",
		Peers:              []Peer{{ID: "node1", RaftAddr: "127.0.0.1:9333", HTTPAddr: "127.0.0.1:9334"}},
		Mode:               ModeSeaweedFS,
		Groups:             4,
		WarmUp:             time.Second,
		ForwardTimeout:     2 * time.Second,
		ApplyTimeout:       5 * time.Second,
		BatchMaxRecords:    256,
		BatchMaxWait:       500 * time.Microsecond,
		QueueDepth:         4096,
		HeartbeatTimeout:   time.Second,
		ElectionTimeout:    time.Second,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		MaxCount:           1 << 20,
	}
}

// GroupCount is the number of raft groups this configuration runs.
func (c Config) GroupCount() int {
	if c.Mode == ModeSlots {
		return c.Groups
	}
	return 1
}

// Validate checks ranges and cross-field rules; New calls it.
func (c Config) Validate() error {
	if c.ID == "" {
		return errNoID
	}
	switch c.Mode {
	case ModeSeaweedFS, ModeReplicated, ModeSlots:
	default:
		return fmt.Errorf("%w: %q", errBadMode, c.Mode)
	}
	if c.Mode == ModeSlots && (c.Groups < 1 || c.Groups > SlotCount) {
		return fmt.Errorf("%w: %d not in [1,%d]", errBadGroups, c.Groups, SlotCount)
	}
	for name, addr := range map[string]string{"bind": c.Bind, "http-bind": c.HTTPBind} {
		if err := checkLoopback(addr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := c.validatePeers(); err != nil {
		return err
	}
	for name, d := range map[string]time.Duration{
		"forward-timeout": c.ForwardTimeout, "apply-timeout": c.ApplyTimeout,
		"batch-max-wait": c.BatchMaxWait, "heartbeat-timeout": c.HeartbeatTimeout,
		"election-timeout": c.ElectionTimeout, "leader-lease-timeout": c.LeaderLeaseTimeout,
	} {
		if d <= 0 {
			return fmt.Errorf("%s: %w", name, errBadDuration)
		}
	}
	if c.WarmUp < 0 {
		return fmt.Errorf("warm-up: %w", errBadDuration)
	}
	if c.BatchMaxRecords < 1 || c.QueueDepth < 1 || c.MaxCount < 1 {
		return errBadBatch
	}
	return nil
}

func (c Config) validatePeers() error {
	seen := make(map[string]bool, len(c.Peers))
	for _, p := range c.Peers {
		if seen[p.ID] || p.ID == "" {
			return fmt.Errorf("%w: %q", errDuplicatePeer, p.ID)
		}
		seen[p.ID] = true
		if err := checkLoopback(p.RaftAddr); err != nil {
			return fmt.Errorf("peer %s raft: %w", p.ID, err)
		}
		if err := checkLoopback(p.HTTPAddr); err != nil {
			return fmt.Errorf("peer %s http: %w", p.ID, err)
		}
	}
	if !seen[c.ID] {
		return errNoSelf
	}
	return nil
}

func (c Config) peer(id string) (Peer, bool) {
	for _, p := range c.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

// benchHosts is the benchmarking range (RFC 2544), which no router
// forwards: the hosts the bench makes on this machine (tests/framework/hosts).
var benchHosts = netip.MustParsePrefix("198.18.0.0/15")

// checkLoopback refuses an address a machine other than this one could
// reach: the stand-in allocates for whoever asks.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if host != "127.0.0.1" && (err != nil || !benchHosts.Contains(ip)) {
		return fmt.Errorf("%w: %q", errNotLoopback, addr)
	}
	return nil
}

// groupAddr derives group g's raft address from group 0's: same host, port+g.
func groupAddr(addr string, g int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("port %q: %w", port, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+g)), nil
}
