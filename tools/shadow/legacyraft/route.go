package legacyraft

import (
	"hash/crc32"
	"sync/atomic"
)

// SlotCount is the number of physical hash slots. It never changes: scaling
// moves slots between raft groups, it does not rehash keys.
const SlotCount = 256

// noGroup marks a slot with no route.
const noGroup = -1

// Slot returns the physical hash slot of a range key: CRC32(range) % 256.
func Slot(rangeKey string) int {
	return int(crc32.ChecksumIEEE([]byte(rangeKey)) % SlotCount)
}

// RouteTable maps every physical hash slot onto a logical raft group. It is
// immutable once built, so a hot path resolves many keys under one revision;
// changes build a new table and swap it in atomically.
type RouteTable struct {
	revision uint64
	groups   [SlotCount]int16
}

// NewRouteTable spreads the slots evenly over groups (slot % groups).
func NewRouteTable(revision uint64, groups int) *RouteTable {
	t := &RouteTable{revision: revision}
	for s := range t.groups {
		t.groups[s] = int16(s % groups)
	}
	return t
}

// Revision identifies this table; a newer table has a higher revision.
func (t *RouteTable) Revision() uint64 { return t.revision }

// Group returns the group of slot, or false when the slot has no route.
func (t *RouteTable) Group(slot int) (int, bool) {
	g := t.groups[slot]
	return int(g), g != noGroup
}

// WithoutSlot returns a copy, one revision newer, in which slot has no route;
// requests for it then fail with ErrNoRoute instead of going elsewhere.
func (t *RouteTable) WithoutSlot(slot int) *RouteTable {
	next := *t
	next.revision++
	next.groups[slot] = noGroup
	return &next
}

// router holds the current route table.
type router struct {
	current atomic.Pointer[RouteTable]
}

func (r *router) load() *RouteTable { return r.current.Load() }

func (r *router) store(t *RouteTable) { r.current.Store(t) }
