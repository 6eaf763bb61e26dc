package dbcache

import "hash/maphash"

// filter is a set of keys that may answer "maybe" for a key it does not
// hold but never "no" for one it does: Bloom filters, a new one twice the
// size of the last whenever the last holds its capacity, so that the false
// positives stay near bitsPerKey's rate however many keys come.
type filter struct {
	seed  [2]maphash.Seed
	parts []*bloom
}

// bitsPerKey and hashes give about 1% false positives.
const (
	bitsPerKey = 10
	hashes     = 7
)

type bloom struct {
	bits     []uint64
	n, limit int
}

func newFilter(capacity int) *filter {
	f := &filter{seed: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	f.grow(max(capacity, 1<<16))
	return f
}

func (f *filter) grow(capacity int) {
	f.parts = append(f.parts, &bloom{bits: make([]uint64, (capacity*bitsPerKey+63)/64), limit: capacity})
}

// positions are key's bit positions in a filter of m bits (double hashing).
func (f *filter) positions(key []byte, m uint64, each func(uint64) bool) bool {
	h1, h2 := maphash.Bytes(f.seed[0], key), maphash.Bytes(f.seed[1], key)|1
	for i := range uint64(hashes) {
		if !each((h1 + i*h2) % m) {
			return false
		}
	}
	return true
}

func (f *filter) add(key []byte) {
	b := f.parts[len(f.parts)-1]
	if b.n >= b.limit {
		f.grow(2 * b.limit)
		b = f.parts[len(f.parts)-1]
	}
	m := uint64(len(b.bits)) * 64
	f.positions(key, m, func(p uint64) bool { b.bits[p/64] |= 1 << (p % 64); return true })
	b.n++
}

// mayHold is false only for a key never added.
func (f *filter) mayHold(key []byte) bool {
	for _, b := range f.parts {
		m := uint64(len(b.bits)) * 64
		if f.positions(key, m, func(p uint64) bool { return b.bits[p/64]&(1<<(p%64)) != 0 }) {
			return true
		}
	}
	return false
}
