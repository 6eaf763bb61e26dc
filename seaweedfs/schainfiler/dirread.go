package schainfiler

import (
	"context"
	"errors"
	"strings"
	"sync"
)

// errNoDirEntry: the root directory has no entry of its own to read.
var errNoDirEntry = errors.New("schainfiler: the root has no entry")

// dirRead carries a new entry's directory, read by the entry's write, to
// the filer's check of that directory right after the write.
type dirRead struct {
	entry string // the path whose write reads its directory
	dir   string // that directory's path

	mu     sync.Mutex
	rec    Record
	loaded bool
}

type dirReadKey struct{}

// WithDirectoryRead marks a filer's insert of path whose next step checks
// that path's directory exists (the filer creates missing directories
// after the entry, so that a directory removed meanwhile comes back): the
// store's write of path then reads the directory's entry in the same
// exchange, and the store's next read of that directory in ctx answers
// from it, once. The read is the owner's, at the write's height or later:
// what a read right after the write would see.
func WithDirectoryRead(ctx context.Context, path string) context.Context {
	dir, _, ok := parentOf(path)
	if !ok || dir == "/" { // an entry of the root: the root has no entry to read
		return ctx
	}
	return context.WithValue(ctx, dirReadKey{}, &dirRead{entry: path, dir: dir})
}

// parentOf splits a filer path into its directory and name (false for the
// root and for a path without a slash).
func parentOf(path string) (dir, name string, ok bool) {
	i := strings.LastIndex(path, "/")
	if i < 0 || path == "/" {
		return "", "", false
	}
	if dir = path[:i]; dir == "" {
		dir = "/"
	}
	return dir, path[i+1:], true
}

// dirReadOf is ctx's mark if its write is of path.
func dirReadOf(ctx context.Context, path string) *dirRead {
	d, _ := ctx.Value(dirReadKey{}).(*dirRead)
	if d == nil || d.entry != path {
		return nil
	}
	return d
}

// answer keeps the directory's record the write brought back.
func (d *dirRead) answer(rec Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rec, d.loaded = rec, true
}

// dirAnswerOf takes the record ctx's write brought back for path, once.
func dirAnswerOf(ctx context.Context, path string) (Record, bool) {
	d, _ := ctx.Value(dirReadKey{}).(*dirRead)
	if d == nil || d.dir != path {
		return Record{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rec, ok := d.rec, d.loaded
	d.rec, d.loaded = Record{}, false
	return rec, ok
}
