package patch

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/s-chain/schain/seaweedfs/schainseq"
)

// LeaderSite names the upstream Topology.IsLeader() calls of one function:
// the operation each guards, in source order. The applier routes each call
// through the hook schainseq.Leads with that operation.
type LeaderSite struct {
	File string // relative to the module root
	Func string // "Receiver.Method" or "Function"
	// Ops holds one operation per call, in order; an entry of HTTP means
	// the operation of the request path r.URL.Path (schainseq.HTTPOp).
	Ops []schainseq.Op
}

// HTTP in a LeaderSite's Ops stands for schainseq.HTTPOp(r.URL.Path).
const HTTP schainseq.Op = 0

// LeaderSites is every Topology.IsLeader() call of the pinned SeaweedFS.
// A call missing here, or a listed function with another number of calls,
// stops the build (ErrUpstreamMoved): whoever updates SeaweedFS decides
// what a new leader-gated path is in each mode.
var LeaderSites = []LeaderSite{
	{"weed/server/master_grpc_server.go", "MasterServer.SendHeartbeat", ops(schainseq.OpHeartbeat, schainseq.OpHeartbeat)},
	{"weed/server/master_grpc_server.go", "MasterServer.KeepConnected", ops(schainseq.OpClients, schainseq.OpClients)},
	{"weed/server/master_grpc_server_admin.go", "MasterServer.LeaseAdminToken", ops(schainseq.OpAdminLock)},
	{"weed/server/master_grpc_server_admin.go", "MasterServer.ReleaseAdminToken", ops(schainseq.OpAdminLock)},
	{"weed/server/master_grpc_server_admin.go", "MasterServer.GetAdminLockStatus", ops(schainseq.OpAdminLock)},
	{"weed/server/master_grpc_server_assign.go", "MasterServer.Assign", ops(schainseq.OpAssign)},
	{"weed/server/master_grpc_server_collection.go", "MasterServer.CollectionList", ops(schainseq.OpClients)},
	{"weed/server/master_grpc_server_collection.go", "MasterServer.CollectionDelete", ops(schainseq.OpAdmin)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.ProcessGrowRequest", ops(schainseq.OpScan, schainseq.OpGrow)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.LookupVolume", ops(schainseq.OpLookup)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.CollectionStatistics", ops(schainseq.OpClients)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.Statistics", ops(schainseq.OpClients)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.VolumeList", ops(schainseq.OpClients)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.VolumeListStream", ops(schainseq.OpClients)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.LookupEcVolume", ops(schainseq.OpLookup)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.VacuumVolume", ops(schainseq.OpVacuum)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.VolumeMarkReadonly", ops(schainseq.OpAdmin)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.ResumeVolumeGrowth", ops(schainseq.OpAdmin)},
	{"weed/server/master_grpc_server_volume.go", "MasterServer.VolumeGrow", ops(schainseq.OpAdmin)},
	{"weed/server/master_server.go", "MasterServer.SetRaftServer", ops(schainseq.OpRaft)},
	{"weed/server/master_server.go", "MasterServer.ensureTopologyId", ops(schainseq.OpRaft, schainseq.OpRaft, schainseq.OpRaft)},
	{"weed/server/master_server.go", "MasterServer.proxyToLeader", ops(HTTP)},
	{"weed/server/master_server.go", "MasterServer.startAdminScripts", ops(schainseq.OpAdmin)},
	{"weed/server/master_server_handlers.go", "MasterServer.dirLookupHandler", ops(schainseq.OpLookup)},
	{"weed/server/master_server_handlers.go", "MasterServer.findVolumeLocation", ops(schainseq.OpLookup)},
	{"weed/server/master_server_handlers.go", "MasterServer.dirAssignHandler", ops(schainseq.OpAssign)},
	{"weed/server/master_server_handlers_admin.go", "MasterServer.submitFromMasterServerHandler", ops(schainseq.OpAssign)},
	{"weed/server/raft_server_handlers.go", "RaftServer.StatusHandler", ops(schainseq.OpRaft)},
	{"weed/telemetry/collector.go", "Collector.isLeader", ops(schainseq.OpRaft)},
	{"weed/topology/topology.go", "Topology.IsLeaderAndCanRead", ops(schainseq.OpRaft, schainseq.OpRaft)},
	{"weed/topology/topology_event_handling.go", "Topology.StartRefreshWritableVolumes", ops(schainseq.OpScan, schainseq.OpVacuum)},
}

// OtherLeaderFiles hold IsLeader() calls of types other than Topology
// (the Kafka gateway's coordinator registry): not leader-gated master
// paths.
var OtherLeaderFiles = []string{
	"weed/mq/kafka/gateway/coordinator_registry.go",
	"weed/mq/kafka/protocol/find_coordinator.go",
	"weed/mq/kafka/protocol/handler.go",
}

func ops(o ...schainseq.Op) []schainseq.Op { return o }

// opIdents are the Go names of the operations, as the rewritten calls spell
// them.
var opIdents = map[schainseq.Op]string{
	schainseq.OpHeartbeat: "OpHeartbeat", schainseq.OpAssign: "OpAssign", schainseq.OpLookup: "OpLookup",
	schainseq.OpGrow: "OpGrow", schainseq.OpStatus: "OpStatus", schainseq.OpClients: "OpClients",
	schainseq.OpAdminLock: "OpAdminLock", schainseq.OpVacuum: "OpVacuum", schainseq.OpAdmin: "OpAdmin",
	schainseq.OpScan: "OpScan", schainseq.OpRaft: "OpRaft",
}

// schainseqImport is how SeaweedFS code imports the new package.
const schainseqImport = `"github.com/seaweedfs/seaweedfs/` + PackageDir + `"`

var (
	leaderCall = regexp.MustCompile(`([\w.]+)\.IsLeader\(\)`)
	funcLine   = regexp.MustCompile(`^func (?:\(\w+ \*?(\w+)\) )?(\w+)`)
)

// leaderCallAt is one X.IsLeader() call: its line (0-based), byte span in
// the line, receiver expression X and enclosing function.
type leaderCallAt struct {
	line, start, end int
	recv, fn         string
}

// findLeaderCalls lists the X.IsLeader() calls of gofmt'd Go source, each
// with the top-level function it is in. Comments are skipped; calls in
// string literals are not expected in SeaweedFS and would be counted.
func findLeaderCalls(src []byte) []leaderCallAt {
	var (
		out []leaderCallAt
		fn  string
	)
	for i, line := range strings.Split(string(src), "\n") {
		if m := funcLine.FindStringSubmatch(line); m != nil {
			fn = m[2]
			if m[1] != "" {
				fn = m[1] + "." + m[2]
			}
		}
		code, _, _ := strings.Cut(line, "//")
		for _, m := range leaderCall.FindAllStringSubmatchIndex(code, -1) {
			out = append(out, leaderCallAt{line: i, start: m[0], end: m[1], recv: code[m[2]:m[3]], fn: fn})
		}
	}
	return out
}

// routeLeaderCalls checks the IsLeader() calls of one file (path relative to
// the module root, content as the hunks left it) against LeaderSites and
// returns the file with every call routed through schainseq.Leads, or nil
// if it has none. Calls the table does not name, and named functions whose
// calls differ in number, are errors.
func routeLeaderCalls(rel string, src []byte) ([]byte, error) {
	if !bytes.Contains(src, []byte("IsLeader()")) || slices.Contains(OtherLeaderFiles, rel) {
		return nil, nil
	}
	calls := findLeaderCalls(src)
	if len(calls) == 0 {
		return nil, nil
	}
	byFunc := map[string][]leaderCallAt{}
	for _, c := range calls {
		byFunc[c.fn] = append(byFunc[c.fn], c)
	}
	sites := map[string]LeaderSite{}
	for _, s := range LeaderSites {
		if s.File == rel {
			sites[s.Func] = s
		}
	}
	var problems []string
	for fn, cs := range byFunc {
		s, ok := sites[fn]
		switch {
		case !ok:
			for _, c := range cs {
				problems = append(problems, fmt.Sprintf("%s:%d: %s.IsLeader() in %s is not a LeaderSite", rel, c.line+1, c.recv, nameOr(fn)))
			}
		case len(s.Ops) != len(cs):
			problems = append(problems, fmt.Sprintf("%s: %s calls IsLeader() %d times, LeaderSites names %d", rel, fn, len(cs), len(s.Ops)))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("%w: leader checks the patch does not cover (add them to seaweedfs/patch LeaderSites with their operation): %s",
			ErrUpstreamMoved, strings.Join(problems, "; "))
	}
	// calls are in source order: number each within its function, then
	// rewrite from the last, so that earlier spans stay valid.
	nth := make([]int, len(calls))
	count := map[string]int{}
	for i, c := range calls {
		nth[i] = count[c.fn]
		count[c.fn]++
	}
	lines := strings.Split(string(src), "\n")
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		lines[c.line] = lines[c.line][:c.start] + hookCall(c.recv, sites[c.fn].Ops[nth[i]]) + lines[c.line][c.end:]
	}
	out := strings.Join(lines, "\n")
	if !strings.Contains(out, schainseqImport) {
		at := strings.Index(out, "\nimport (\n")
		if at < 0 {
			return nil, fmt.Errorf("%w: %s: no import block to add %s to", ErrUpstreamMoved, rel, schainseqImport)
		}
		at += len("\nimport (\n")
		out = out[:at] + "\t" + schainseqImport + "\n" + out[at:]
	}
	return []byte(out), nil
}

func nameOr(fn string) string {
	if fn == "" {
		return "no function"
	}
	return fn
}

// hookCall is the routed form of recv.IsLeader().
func hookCall(recv string, op schainseq.Op) string {
	expr := "schainseq.HTTPOp(r.URL.Path)"
	if op != HTTP {
		expr = "schainseq." + opIdents[op]
	}
	return fmt.Sprintf("schainseq.Leads(%s.Sequence, %s, %s.IsLeader)", recv, expr, recv)
}

// routeLeaders routes the IsLeader() calls of every non-test Go file of the
// tree (as the hunks left it) through the hook, adding the routed files to
// patched, and fails if a call is not covered or a LeaderSite was not
// found.
func routeLeaders(weedRoot string, patched map[string][]byte) error {
	found := map[[2]string]bool{}
	err := walkGo(weedRoot, patched, func(rel, path string, b []byte) error {
		if !bytes.Contains(b, []byte("IsLeader()")) {
			return nil
		}
		out, err := routeLeaderCalls(rel, b)
		if err != nil || out == nil {
			return err
		}
		for _, c := range findLeaderCalls(b) {
			found[[2]string{rel, c.fn}] = true
		}
		patched[path] = out
		return nil
	})
	if err != nil {
		return err
	}
	var missing []string
	for _, s := range LeaderSites {
		if !found[[2]string{s.File, s.Func}] {
			missing = append(missing, s.File+" "+s.Func)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: LeaderSites name functions without IsLeader() calls: %s", ErrUpstreamMoved, strings.Join(missing, ", "))
	}
	return nil
}
