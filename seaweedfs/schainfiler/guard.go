package schainfiler

import (
	"context"
	"sync"
)

// guard makes one path's read-then-write conditional: the first read of
// the path fixes the version (0: absent) the write requires.
type guard struct {
	path string

	mu      sync.Mutex
	read    bool
	version uint64
	refused bool
}

type guardKey struct{}

// Guard marks a request whose check of path and write of path must be one
// atomic step (an exclusive create, a conditional write): under it, the
// store's first read of path records the version it saw, and the store's
// write of path requires that version still (or that the entry is still
// absent). Another filer's write in between refuses it: Refused then
// reports it. Reads and writes of other paths (parent directories) are
// not affected.
func Guard(ctx context.Context, path string) context.Context {
	return context.WithValue(ctx, guardKey{}, &guard{path: path})
}

// Refused reports whether the guarded write of ctx was refused because the
// entry changed after it was read.
func Refused(ctx context.Context) bool {
	g, _ := ctx.Value(guardKey{}).(*guard)
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

func guardOf(ctx context.Context, path string) *guard {
	g, _ := ctx.Value(guardKey{}).(*guard)
	if g == nil || g.path != path {
		return nil
	}
	return g
}

// saw records the version of the first read.
func (g *guard) saw(version uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.read {
		g.read, g.version = true, version
	}
}

// condition is what the write requires: what the first read saw, or
// nothing if no read came first.
func (g *guard) condition() (ifAbsent bool, ifVersion uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !g.read:
		return false, 0
	case g.version == 0:
		return true, 0
	}
	return false, g.version
}

func (g *guard) refuse() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refused = true
}
