// Package state stores S-Chain's chain state and the tree of blocks being
// processed on top of it.
//
// Every processing block gets its own Layer, a versiondb chained on its
// parent's layer (or on the accepted database once the parent is accepted),
// so a child can be built and verified before its parent is accepted and
// siblings never see each other's writes. Accept writes one layer, the block
// bytes, the height index and the last-accepted pointer in one database
// batch; Reject drops one layer and, with it, its descendants'.
//
// Key tree (one keyspace; each key starts with a one-byte table tag):
//
//	'c' range                      -> u64 next unissued id        (rooted)
//	'm' str bucket | key           -> manifest (txs encoding)     (rooted)
//	'x' txID                       -> receipt                     (rooted)
//	'r' u64 round | signing hash   -> {}   replay index           (rooted)
//	'e'                            -> u64 round below which 'r' is empty (rooted)
//	'L' range                      -> lease {holder, token, expiry} (rooted)
//	'F' range                      -> u64 last fencing token granted (rooted)
//	'v' str bucket | key           -> object: version, height, manifest,
//	                                  attributes (kind 4; rooted)
//	'k' str range | u64 id         -> chunk: live (holder) | released |
//	                                  reclaimed (height) (rooted)
//	'g' str bucket | u64 height | str range | u64 id
//	                               -> u64 size | [32] hash: the bucket's
//	                                  released list (rooted)
//	'b' blockID                    -> block bytes                 (index)
//	'h' u64 height                 -> blockID                     (index)
//	'a'                            -> last accepted {id, height, root}
//
// "Rooted" keys are written only through layers and committed to by the state
// root; index keys are written by Accept.
//
// The state root of a block is SHA-256 over the parent's root, the height and
// the block's sorted changes, so it costs O(changes) however large the state
// is, and two nodes agree on it exactly when they applied the same changes
// to the same history.
package state
