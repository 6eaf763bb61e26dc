package pinning

import "math/bits"

// fracBits is the number of fractional bits of the fixed-point logarithm.
// 40 bits keep distances below 2^47, so weight*distance fits in 128 bits for
// every uint64 weight, and resolve u to far finer than its 64-bit input.
const fracBits = 40

// distance returns -log2(u) in Q(fracBits) fixed point, where
// u = (h+1) / 2^64. It is 0 only when h is the maximum value (u == 1).
func distance(h uint64) uint64 {
	if h == ^uint64(0) {
		return 0
	}
	return 64<<fracBits - log2Fixed(h+1)
}

// log2Fixed returns log2(x) for x >= 1 in Q(fracBits) fixed point, truncated.
// It uses the classic digit-by-digit algorithm: normalise x to a mantissa m in
// [1, 2), then square m once per fractional bit; every time the square reaches
// 2 the bit is set and m is halved.
func log2Fixed(x uint64) uint64 {
	intPart := uint64(bits.Len64(x) - 1)
	// Mantissa in Q63: m = x / 2^intPart, with the leading 1 at bit 63.
	m := x << (63 - intPart)
	var frac uint64
	for i := 0; i < fracBits; i++ {
		// m*m is the square in Q126; its top bit says whether it reached 2.
		hi, lo := bits.Mul64(m, m)
		frac <<= 1
		if hi>>63 != 0 {
			frac |= 1
			m = hi // (m*m)/2 in Q63
		} else {
			m = hi<<1 | lo>>63 // m*m in Q63
		}
	}
	return intPart<<fracBits | frac
}
