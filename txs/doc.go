// Package txs defines S-Chain's transactions, their one canonical encoding and
// their owner signature.
//
// The kinds are a closed set visited through Visitor:
//
//   - AllocateTx reserves ids [base, base+count) from each entry's range.
//   - PutManifestTx commits object manifests whose chunks point at ids
//     already reserved.
//   - HeartbeatTx states that a validator is alive in a liveness round.
//   - LeaseTx acquires, renews or releases the lease of each entry's range
//     (kind 8).
//
// Every kind but the heartbeat carries many entries of one owner under a single BLS signature
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
//	lease entry:     u8 op | str range | str holder | u64 token | u64 ttlMs
//	str:             u16 length | bytes
//
// Parse accepts a byte string only if encoding the result gives the same
// bytes back, so every transaction has exactly one encoding and one ID.
package txs
