// Package benchmark drives one allocation workload against several id
// allocators on this machine and measures them side by side: the legacy raft
// allocator (a SeaweedFS-master stand-in, as separate processes) and an
// S-Chain network. It exists so that "S-Chain is as fast as the legacy
// master and keeps allocating when a node dies" is a number measured in one
// run, not a claim.
//
// The package has three layers:
//
//   - pure measurement (stats.go, failover.go, duplicates.go, schedule.go,
//     table.go): percentiles, per-range and global stalls, ids issued twice,
//     the interleaving order of rounds, the ratio table. No clocks, no IO.
//   - the load generator (workload.go, runner.go): closed-loop clients that
//     record every request as a Sample, steady rounds interleaved across the
//     systems, and a failover phase per system that kills one node mid-run.
//   - the systems (legacy.go, schain.go): start, drive, kill and stop a real
//     3-process legacy cluster and a real 3-node local S-Chain network.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package benchmark
