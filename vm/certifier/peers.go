package certifier

import (
	"cmp"
	"slices"

	"github.com/ava-labs/avalanchego/ids"
)

// peerHeights is how far the other validators got, as their pushed
// signatures say: each validator pushes its signature on a block as it
// accepts it, so the newest height it pushed is one it accepted. A node
// that answers reads needs to know when it lags behind (a node that
// stopped following the chain keeps answering from old state otherwise).
// One validator's word is not enough (it may lie, or run ahead of a
// fork): the height is the newest that validators holding more than a
// third of the stake reached, of whom at least one is honest while fewer
// than a third of the stake is Byzantine. Guarded by Certifier.mu; bounded
// by the newest validator set.
type peerHeights struct {
	newest map[ids.NodeID]uint64
	stake  map[ids.NodeID]uint64
	total  uint64
	// height is newest's answer, valid unless dirty.
	height uint64
	known  bool
	dirty  bool
}

// weigh takes the stake of a new validator set, forgetting validators no
// longer in it.
func (p *peerHeights) weigh(stake map[ids.NodeID]uint64, total uint64) {
	p.stake, p.total, p.dirty = stake, total, true
	for id := range p.newest {
		if _, ok := stake[id]; !ok {
			delete(p.newest, id)
		}
	}
}

// saw records that a validator accepted height.
func (p *peerHeights) saw(id ids.NodeID, height uint64) {
	if p.newest == nil {
		p.newest = map[ids.NodeID]uint64{}
	}
	if height > p.newest[id] {
		p.newest[id] = height
		p.dirty = true
	}
}

// reached is the newest height validators with more than a third of the
// stake pushed a signature at or above (false: none yet).
func (p *peerHeights) reached() (uint64, bool) {
	if !p.dirty {
		return p.height, p.known
	}
	p.dirty = false
	type claim struct{ height, stake uint64 }
	claims := make([]claim, 0, len(p.newest))
	for id, h := range p.newest {
		claims = append(claims, claim{h, p.stake[id]})
	}
	slices.SortFunc(claims, func(a, b claim) int { return cmp.Compare(b.height, a.height) })
	var sum uint64
	p.height, p.known = 0, false
	for _, c := range claims {
		sum += c.stake // no overflow: a subset of a set whose total fits
		if sum > p.total/3 {
			p.height, p.known = c.height, true
			break
		}
	}
	return p.height, p.known
}

// PeersHeight is the newest block height that validators holding more
// than a third of the newest validator set's stake pushed their signature
// for (so that at least one honest validator accepted it), false while
// they have not. A node far below it lags behind the chain.
func (c *Certifier) PeersHeight() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peers.reached()
}
