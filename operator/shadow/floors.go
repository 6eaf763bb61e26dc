package shadow

import "math"

// Floors are the cutover floors: S-Chain must start each range strictly
// above every id the legacy allocator issued, reissued ids included, because
// the legacy counter was never durable and only the ids seen bound it.
//
// A floor is highest seen id + 1 + Margin; Margin covers ids the legacy may
// have issued that the shadow did not observe. Ranges the shadow never
// tracked get Global, the maximum over every observed range: use Global
// alone when other clients may have used the legacy allocator, or when ids
// share one key space (the SeaweedFS sequencer is global).
type Floors struct {
	Margin   uint64            `json:"margin"`
	Global   uint64            `json:"global"`
	PerRange map[string]uint64 `json:"per_range"`
}

// For returns the floor to pass to SChain.Allocate for rangeKey.
func (f Floors) For(rangeKey string) uint64 {
	if v, ok := f.PerRange[rangeKey]; ok {
		return v
	}
	return f.Global
}

// Floors computes cutover floors from every legacy id observed so far.
func (c *Comparator) Floors(margin uint64) Floors {
	f := Floors{Margin: margin, Global: floorAbove(c.legacyMax, margin), PerRange: make(map[string]uint64, len(c.ranges))}
	for key, rs := range c.ranges {
		if rs.legacyMax > 0 {
			f.PerRange[key] = floorAbove(rs.legacyMax, margin)
		}
	}
	return f
}

// floorAbove is highest+1+margin, saturating instead of wrapping.
func floorAbove(highest, margin uint64) uint64 {
	if highest > math.MaxUint64-1-margin {
		return math.MaxUint64
	}
	return highest + 1 + margin
}
