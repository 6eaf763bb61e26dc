// Package txs defines S-Chain's transactions, their one canonical encoding and
// their owner signature.
//
// The kinds are a closed set visited through Visitor:
//
//   - AllocateTx (1) reserves ids [base, base+count) from each entry's range.
//   - PutManifestTx (2) commits object manifests whose chunks point at ids
//     already reserved, last writer wins; chains run it only before the
//     manifests upgrade (execute.Rules.Manifests).
//   - HeartbeatTx (3) is a validator's liveness statement.
//   - ManifestTx (4) writes versioned manifests, each with a precondition
//     and opaque attributes; an object's chunks are bound to it while it is
//     live and released when it is overwritten or deleted.
//   - ReclaimTx (5) acknowledges released chunks a blob store reclaimed.
//   - LeaseTx (8) acquires, renews or releases the lease of each entry's
//     range: one holder at a time, with a fencing token.
//
// Kinds 6 and 7 are reserved for manifests, 9 to 11 for leases. A kind's
// encoding never changes: a new encoding is a new kind.
//
// A kind with entries carries many entries of one owner under a single BLS signature
// (group commit), so one signature check is amortised over the whole batch.
//
// # Wire format (version 3, all integers big endian)
//
//	u16 version | u8 kind | u32 networkID | [32] chainID | u64 pChainHeight
//	[32] fingerprint | [20] owner | u64 nonce | u64 round | u64 blockHeight
//	u32 entries | entries... | [96] signature
//
//	blockHeight:     0, or the only block height the transaction is valid
//	                 at (version 3; see Header.BlockHeight)
//	heartbeat:       no entries (the header's round is its statement); a
//	                 zero fingerprint and block height
//	allocate entry:  str range | u64 count | u64 floor
//	manifest entry:  str bucket | str key | u64 size | [32] contentHash
//	                 u8 deleted | u16 chunks | chunks...
//	chunk:           str range | u64 id | u64 size | [32] hash
//	manifest entry (kind 4): manifest entry as above | u8 condition
//	                 (high bit: adopt)
//	                 [u64 version if condition 2 | [32] hash if 3]
//	                 u32 attributes length | attributes
//	reclaim entry:   str range | u64 id
//	lease entry:     u8 op | str range | str holder | u64 token | u64 ttlMs
//	str:             u16 length | bytes
//
// Parse accepts a byte string only if encoding the result gives the same
// bytes back, so every transaction has exactly one encoding and one ID.
package txs
