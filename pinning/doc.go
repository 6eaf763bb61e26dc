// Package pinning decides, without an election, which validator writes a range.
//
// Every node evaluates the same pure function over the validator set frozen at
// a P-chain height and gets the same single owner for each range:
// weighted rendezvous hashing (HRW). A member with weight w wins a range with
// probability w / W, and adding or removing a member moves only the ranges that
// member gains or loses.
//
// The score of member m for range r is w_m / -log2(u), where u in (0, 1] comes
// from SHA-256 over a domain-separated, length-prefixed encoding of (r, m). The
// logarithm is computed in fixed point with integer arithmetic and scores are
// compared by 128-bit cross multiplication, so the result is bit-identical on
// every CPU and GOARCH. No floating point is used anywhere in this package.
package pinning
