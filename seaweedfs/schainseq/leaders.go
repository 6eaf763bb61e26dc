package schainseq

// Op is what an upstream Topology.IsLeader() call guards. Every such call
// of SeaweedFS goes through Leads, named with its Op by the patch
// (seaweedfs/patch LeaderSites), and the build stops on a call the patch
// does not name: a leader-gated path SeaweedFS adds cannot slip past the
// modes below unreviewed.
type Op uint8

// The operations, and where each runs (docs/using/seaweedfs-masters.md has the
// table):
const (
	// OpHeartbeat: take a volume server's heartbeats into this master's
	// topology, and tell this master's clients of a server gone.
	OpHeartbeat Op = iota + 1
	// OpAssign: assign file keys (gRPC Assign, /dir/assign, /submit).
	OpAssign
	// OpLookup: look volumes up in this master's topology, and refuse
	// lookups and assigns while it warms up.
	OpLookup
	// OpGrow: grow volumes when a layout runs out (the grow-request loop).
	OpGrow
	// OpStatus: this master's own /dir/status.
	OpStatus
	// OpClients: the client protocol of filers, S3 gateways, mounts and
	// shells: KeepConnected (volume locations, cluster nodes), listings
	// and statistics of the topology, the HTTP calls a follower proxies.
	OpClients
	// OpAdminLock: the admin shell lock (LeaseAdminToken and friends).
	OpAdminLock
	// OpVacuum: vacuum, automatic and asked for.
	OpVacuum
	// OpAdmin: the other administration calls (mark read-only, delete a
	// collection, grow or resume growth on request), and the maintenance
	// scripts.
	OpAdmin
	// OpScan: the periodic scans of the topology (dead nodes, full and
	// crowded volumes, quiet volume sizes).
	OpScan
	// OpRaft: raft's own duties and reports: the topology id, raft status,
	// telemetry of the leader.
	OpRaft
)

var opNames = map[Op]string{
	OpHeartbeat: "heartbeat", OpAssign: "assign", OpLookup: "lookup", OpGrow: "grow", OpStatus: "status",
	OpClients: "clients", OpAdminLock: "admin-lock", OpVacuum: "vacuum", OpAdmin: "admin", OpScan: "scan", OpRaft: "raft",
}

func (o Op) String() string { return opNames[o] }

// Ops lists every operation, in order.
func Ops() []Op {
	out := make([]Op, 0, len(opNames))
	for o := OpHeartbeat; int(o) <= len(opNames); o++ {
		out = append(out, o)
	}
	return out
}

// EveryLeaderlessMaster reports whether every schain-leaderless master runs
// op from its own topology; the others stay with the raft leader there.
func EveryLeaderlessMaster(op Op) bool {
	switch op {
	case OpHeartbeat, OpAssign, OpLookup, OpGrow, OpStatus:
		return true
	}
	return false
}

// Leads is the hook every upstream Topology.IsLeader() call goes through:
// whether this master runs op now. isLeader is the call it replaces.
//
//   - raft, snowflake, schain-shadow, schain: raft leadership, as stock.
//   - schain-leaderless: every master for EveryLeaderlessMaster(op), the
//     raft leader for the rest.
//   - schain-raftless: every master, for every op: there is no raft, and
//     what must run at one master at a time takes an S-Chain lease inside
//     the op (raftless.go).
func Leads(seq any, op Op, isLeader func() bool) bool {
	if Raftless(seq) || Leaderless(seq) && EveryLeaderlessMaster(op) {
		return true
	}
	return isLeader()
}

// HTTPOp is the operation of an HTTP call a follower would proxy to the
// leader: a master's own assigns and status, or the client protocol.
func HTTPOp(path string) Op {
	switch path {
	case "/dir/assign":
		return OpAssign
	case "/dir/status":
		return OpStatus
	}
	return OpClients
}
