// Package seaweed is the legacy.Allocator of a real SeaweedFS master
// cluster, so the shadow comparison can run against production masters and
// not only against the legacyraft stand-in.
//
// Allocate is one GET /dir/assign?count=N&collection=C&dataSize=1. The
// answer's fid "<volume>,<hex key><8 hex cookie>" is parsed strictly
// (ParseFileID); its file key is the first id of the result and count keys
// [key, key+count) are issued. The key space is global: one sequencer on the
// leader serves every collection, so compare with
// shadow.Config.LegacySharedKeySpace on.
//
// Decisions:
//   - Range to collection: a range is a bucket or a band "bucket/..." of
//     one; its collection is the bucket, as the S3 gateway names
//     collections, sanitised deterministically when not a safe name
//     (Collection).
//   - Term: SeaweedFS exposes no raft term over HTTP. /cluster/status names
//     the leader, so the client counts the leader changes it observes and
//     uses 1 + changes as Result.Term (Client.Leader). It re-reads the
//     leader at least every Config.LeaderRefresh and after any
//     unavailability; the master's warm-up after an election (503 for about
//     15 s) keeps a new leader's assignments from being attributed to the
//     old one.
//   - Classes: no HTTP answer, 502 (a follower proxying to a dead leader),
//     503 (warming up, volume growth), 408/504, and "no writable/free
//     volumes" (a leader before volume servers registered) are
//     legacy.ErrUnavailable; every other refusal and a malformed 200 answer
//     are legacy.ErrRejected. Err* name the finer classes.
//   - Failover: the known leader first, then the configured masters in
//     order, moving on only after an unavailable answer; no waiting and no
//     retry of the same master, so the comparison sees the outage. Each
//     exchange is bounded by Config.RequestTimeout (connect by DialTimeout)
//     and by the caller's context.
//   - Written keys: the master learns them only from volume servers'
//     heartbeats (gRPC), i.e. from real uploads, so this package implements
//     no legacy.WriteReporter; keys assigned but never written are what a
//     leader change reissues.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package seaweed
