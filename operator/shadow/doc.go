// Package shadow compares the legacy allocator with S-Chain on the same
// traffic and decides when cutover is safe.
//
// The core (Comparator) is a pure step function in the style of etcd raft's
// RawNode: it starts no goroutines and reads no clock; every observation
// carries its own time and latencies, so streams replay deterministically in
// tests. Its memory is bounded: per-range id intervals are merged and capped,
// latencies go to fixed log buckets, examples are capped per kind.
//
// The Runner is the IO shell around it: it drives both allocators
// concurrently, measures, feeds the comparator and reports heartbeats of
// written keys back to the legacy allocator.
//
// Decisions:
//   - Findings are classified (Kind.Class). Disagreements between the sides,
//     S-Chain violations, and legacy anomalies (a duplicate within one leader
//     term, which no known defect explains) reset the gate's clean window. A
//     legacy reissue across terms is the known defect of a non-durable
//     counter: it is evidence for cutover, recorded but not a reset.
//   - S-Chain violations block cutover for good by default
//     (GateConfig.BlockOnViolation): a duplicate id breaks invariant 2.
//   - The gate window is measured in observation time (first to last clean
//     observation), never wall time, so an idle shadow does not become ready.
//   - Monotonicity is judged in issue order, so the Runner serialises each
//     range; ranges run concurrently.
//   - Floors are highest legacy id seen + 1 + margin, reissued ids included;
//     SeaweedFS keys share one key space, so Floors.Global is the safe choice
//     there (Config.LegacySharedKeySpace also tracks reissues across ranges).
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package shadow
