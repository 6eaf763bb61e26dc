// Package schainseq lets a SeaweedFS master allocate file keys and volume ids
// through S-Chain. It is the new code of the weed patch: scripts/build-weed.sh
// copies this package (without its tests) into the SeaweedFS tree as
// weed/sequence/schainseq, and the hunks in seaweedfs/patch call it.
//
// It imports only the standard library, so the patched SeaweedFS keeps its
// module graph, and it is compiled and tested here, in this module, as well
// (a test fails on any other import).
//
// Sequencer types (master.toml, [master.sequencer] type):
//
//   - "schain-shadow": the stock sequencer and raft volume ids keep serving.
//     Every file-key and volume-id allocation is offered to a bounded queue
//     and mirrored asynchronously to S-Chain (pooled allocations on the
//     volume's range); the master never waits for S-Chain and never fails
//     because of it. A full queue drops the mirror and counts the drop. Each
//     mirrored allocation is written as a Pair (legacy answer, S-Chain
//     answer) to a JSON-lines file that `schain seaweedfs shadow` feeds to
//     the shadow comparator.
//   - "schain": file keys and volume ids come from S-Chain. The leader holds
//     committed reservations (accepted AllocateTx, waited for with
//     allocate{wait}) per range and hands keys out from memory; reservations
//     are refilled in the background ahead of need, sized by the observed
//     rate. A key S-Chain did not commit is never handed out: when no
//     committed key is left, an assign waits at most the configured bound
//     and then fails with an error that names S-Chain (see NextFileId).
//   - any type, "raft" included: file_key_floor and volume_id_floor, the
//     floors a rollback from S-Chain sets, so that the stock sequencer never
//     reissues an id S-Chain handed out.
//
// Ranges: file keys of volume v come from range <prefix>/keys/<v/band> (band
// 1: one range per volume, so ranges spread over validators by rendezvous
// hashing and one validator's death touches only the volumes it owns); volume
// ids come from <prefix>/volumes. A cutover records its floors on chain as
// the counters of <prefix>/floor/keys and <prefix>/floor/volumes; every
// reservation passes them as its floor, so every S-Chain id is above every
// legacy one, and a second cutover can only raise them.
package schainseq
