package benchmark

// Slot is one steady round of one system.
type Slot struct {
	Round  int `json:"round"`
	System int `json:"system"`
}

// Schedule orders rounds × systems steady slots so that machine drift
// (thermal, other tenants, caches warming) weighs every system equally:
// systems alternate within a round, and odd rounds visit them in reverse
// (A B C, C B A, A B C, ...), so a linear drift over an even number of
// rounds gives every system the same mean position.
func Schedule(systems, rounds int) []Slot {
	out := make([]Slot, 0, max(systems*rounds, 0))
	for r := 0; r < rounds; r++ {
		for i := 0; i < systems; i++ {
			s := i
			if r%2 == 1 {
				s = systems - 1 - i
			}
			out = append(out, Slot{Round: r, System: s})
		}
	}
	return out
}
