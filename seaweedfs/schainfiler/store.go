package schainfiler

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

var (
	// ErrTooLarge: an entry or KV value larger than the chain's
	// txLimits.maxAttributeBytes, or a path longer than its maxKeyLen.
	ErrTooLarge = errors.New("schainfiler: larger than the chain's limits")
	// ErrBadPath: a path that is not UTF-8 (manifest keys are).
	ErrBadPath = errors.New("schainfiler: the path is not UTF-8")
	// ErrNULInPath: a directory or name containing NUL (0x00). NUL ends a
	// directory in the store's keys (Key), so /d/"a\x00b" and /d"\x00a"/b
	// would be one manifest; such paths are refused, as SeaweedFS's mongodb
	// store refuses them.
	ErrNULInPath = errors.New("schainfiler: the path contains NUL (0x00), which the store's keys use to end a directory")
	// ErrTooManyChunks: an entry of more chunks than a manifest may bind
	// (txLimits.maxChunks) whose write would unbind a chunk it still names.
	ErrTooManyChunks = errors.New("schainfiler: more chunks than a manifest binds, and the write would release one the entry still names")
	// ErrKvNotFound: no KV value at that key.
	ErrKvNotFound = errors.New("schainfiler: no KV value")

	errBadConfig = errors.New("schainfiler: invalid config")
)

// separator ends a directory in a key: the directory's entries are the
// keys dir + separator + name.
const separator = "\x00"

// Config is the store's view of the chain and of the masters.
type Config struct {
	// Bucket holds the entries; Bucket + ".kv" the KV values.
	Bucket string
	// KeyPrefix is the masters' schain_prefix when their file keys come
	// from S-Chain: an entry's chunks are then bound to its manifest
	// (Bucket must be KeyPrefix, whose key ranges they are in). Empty:
	// chunks stay in the attributes only.
	KeyPrefix string
	// VolumeBand is the masters' schain_volume_band.
	VolumeBand uint32
	// MaxKeyLen, MaxAttributeBytes and MaxChunks are the chain's txLimits.
	MaxKeyLen         int
	MaxAttributeBytes int
	MaxChunks         int
	// PageSize is the entries one listing call asks for (at most 1000).
	PageSize int
	// Parallel bounds the tombstones DeleteChildren writes at once (the
	// owner group-commits them).
	Parallel int
	// ReclaimEvery is how often released chunks are acknowledged (the
	// filer deletes chunks no entry names itself); 0: never.
	ReclaimEvery time.Duration
}

// DefaultConfig is the store on bucket with the chain's default limits.
func DefaultConfig(bucket string) Config {
	return Config{Bucket: bucket, VolumeBand: 1, MaxKeyLen: 1024, MaxAttributeBytes: 32 << 10, MaxChunks: 256,
		PageSize: 1000, Parallel: 32, ReclaimEvery: 10 * time.Second}
}

func (c Config) verify() error {
	switch {
	case c.Bucket == "" || strings.ContainsAny(c.Bucket, "/ "):
		return fmt.Errorf("%w: bucket %q (a single range segment)", errBadConfig, c.Bucket)
	case c.KeyPrefix != "" && c.KeyPrefix != c.Bucket:
		return fmt.Errorf("%w: chunks of the key prefix %q can only be bound in bucket %q, not %q", errBadConfig, c.KeyPrefix, c.KeyPrefix, c.Bucket)
	case c.MaxKeyLen < 1 || c.MaxAttributeBytes < 1 || c.MaxChunks < 0 || c.PageSize < 1 || c.PageSize > 1000 || c.Parallel < 1:
		return fmt.Errorf("%w: limits, page size (1..1000) and parallelism must be positive", errBadConfig)
	}
	return nil
}

// Store keeps filer entries on S-Chain. It is safe for concurrent use.
type Store struct {
	cfg   Config
	chain *counted
	kv    string
	stop  chan struct{}
	done  sync.WaitGroup
}

// Calls counts a store's exchanges with S-Chain by kind: what the filer's
// calls cost the nodes, each read a round trip to the bucket's owner and
// each write one waited for until its block is accepted.
type Calls struct {
	Gets, Puts, Lists uint64
}

// counted is a Chain that counts the store's reads, writes and listings.
type counted struct {
	Chain
	gets, puts, lists atomic.Uint64
}

func (c *counted) Get(ctx context.Context, bucket, key string) (Record, error) {
	c.gets.Add(1)
	return c.Chain.Get(ctx, bucket, key)
}

func (c *counted) Put(ctx context.Context, bucket string, w Write) (Written, error) {
	c.puts.Add(1)
	return c.Chain.Put(ctx, bucket, w)
}

func (c *counted) List(ctx context.Context, bucket, prefix, startAfter string, limit int) (Page, error) {
	c.lists.Add(1)
	return c.Chain.List(ctx, bucket, prefix, startAfter, limit)
}

// Calls reports the exchanges the store made since it opened.
func (s *Store) Calls() Calls {
	return Calls{Gets: s.chain.gets.Load(), Puts: s.chain.puts.Load(), Lists: s.chain.lists.Load()}
}

// New opens the store; Close stops its background work.
func New(cfg Config, chain Chain) (*Store, error) {
	if err := cfg.verify(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, chain: &counted{Chain: chain}, kv: cfg.Bucket + ".kv", stop: make(chan struct{})}
	if cfg.KeyPrefix != "" && cfg.ReclaimEvery > 0 {
		s.done.Add(1)
		go s.reclaimLoop()
	}
	return s, nil
}

// Close stops the background work.
func (s *Store) Close() {
	close(s.stop)
	s.done.Wait()
}

// pathOf is the full path of dir's entry name, as the filer writes it.
func pathOf(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// Key is the manifest key of dir/name.
func Key(dir, name string) string { return dir + separator + name }

func (s *Store) key(dir, name string) (string, error) {
	if err := noNUL(dir, name); err != nil {
		return "", err
	}
	k := Key(dir, name)
	switch {
	case !utf8.ValidString(k):
		return "", fmt.Errorf("%w: %q", ErrBadPath, pathOf(dir, name))
	case len(k) > s.cfg.MaxKeyLen:
		return "", fmt.Errorf("%w: the path %s is %d bytes, the chain's txLimits.maxKeyLen %d", ErrTooLarge, pathOf(dir, name), len(k)-1, s.cfg.MaxKeyLen)
	}
	return k, nil
}

// noNUL refuses a directory or name containing NUL (ErrNULInPath): the
// key of dir/name would then be another path's too.
func noNUL(dir, name string) error {
	if strings.Contains(dir, separator) || strings.Contains(name, separator) {
		return fmt.Errorf("%w: %q (hint: rename it without NUL; it could not be told apart from another path)", ErrNULInPath, pathOf(dir, name))
	}
	return nil
}

// FileChunk is one chunk of an entry as the filer has it.
type FileChunk struct {
	FileID string
	Size   uint64
}

// Put stores an entry: its encoded form and its chunks. Under a guard of
// this path the write is conditional on what the guarded read saw.
func (s *Store) Put(ctx context.Context, dir, name string, encoded []byte, chunks []FileChunk, hardLinked bool) error {
	k, err := s.key(dir, name)
	if err != nil {
		return err
	}
	if len(encoded) > s.cfg.MaxAttributeBytes {
		return fmt.Errorf("%w: the entry %s/%s encodes to %d bytes, the chain's txLimits.maxAttributeBytes %d", ErrTooLarge, dir, name, len(encoded), s.cfg.MaxAttributeBytes)
	}
	w := Write{Key: k, Attributes: encoded, Adopt: true}
	var all []Chunk
	if !hardLinked { // a hard link's chunks belong to its KV record
		all = s.bindable(chunks)
	}
	w.Chunks = all
	over := len(all) > s.cfg.MaxChunks
	path := pathOf(dir, name)
	d := dirReadOf(ctx, path)
	if d != nil {
		if w.ThenGet, err = s.dirKey(dir); err != nil {
			d = nil
		}
	}
	for attempt := 1; ; attempt++ {
		if over {
			if err := s.keepBound(ctx, path, all, &w); err != nil {
				return err
			}
		}
		written, err := s.write(ctx, path, w)
		if over && attempt < maxRebinds && errors.Is(err, ErrPreconditionFailed) && guardOf(ctx, path) == nil {
			continue // another write of the entry came between: read its chunks again
		}
		if d != nil && err == nil && written.Then != nil {
			d.answer(*written.Then)
		}
		return err
	}
}

// maxRebinds bounds the attempts of a write of more chunks than a manifest
// binds against other writes of the same entry.
const maxRebinds = 8

// keepBound sets w up for an entry of more chunks (all) than a manifest
// binds: it binds the first maxChunks, and only if that keeps every chunk
// the entry's manifest holds and still names, since a write releases the
// chunks it does not name. SeaweedFS appends an entry's new chunks, so the
// chunks bound before are among the first; a rename writes the same list,
// so the new entry adopts the very chunks the old one held, and deleting
// the old one releases none. Otherwise the write is refused
// (ErrTooManyChunks): it would release a chunk still in use. The write is
// conditional on the version read (unless a guard already makes it
// conditional), so that no other write changes the bound chunks in
// between.
func (s *Store) keepBound(ctx context.Context, path string, all []Chunk, w *Write) error {
	w.Chunks = all[:s.cfg.MaxChunks]
	rec, err := s.chain.Get(ctx, s.cfg.Bucket, w.Key)
	switch {
	case errors.Is(err, ErrNotFound):
		rec = Record{Deleted: true}
	case err != nil:
		return fmt.Errorf("schainfiler: reading the chunks %s holds: %w", path, err)
	}
	w.IfAbsent, w.IfVersion = rec.Deleted, 0
	if rec.Deleted {
		return nil
	}
	w.IfVersion = rec.Version
	type ref struct {
		rng string
		id  uint64
	}
	named := make(map[ref]bool, len(all))
	for _, ch := range all {
		named[ref{ch.Range, ch.ID}] = true
	}
	kept := make(map[ref]bool, len(w.Chunks))
	for _, ch := range w.Chunks {
		kept[ref{ch.Range, ch.ID}] = true
	}
	for _, ch := range rec.Chunks {
		if r := (ref{ch.Range, ch.ID}); named[r] && !kept[r] {
			return fmt.Errorf("%w: %s names %d chunks, a manifest binds at most %d (txLimits.maxChunks), and its chunk %s/%d, bound now, is not among the first %d (hint: raise txLimits.maxChunks in the genesis, or write the entry with its chunks in their order, new ones after)",
				ErrTooManyChunks, path, len(all), s.cfg.MaxChunks, ch.Range, ch.ID, s.cfg.MaxChunks)
		}
	}
	return nil
}

// dirKey is the key of directory dir's own entry ("" for the root, which
// has none).
func (s *Store) dirKey(dir string) (string, error) {
	parent, name, ok := parentOf(dir)
	if !ok {
		return "", errNoDirEntry
	}
	return s.key(parent, name)
}

// Delete writes the entry's tombstone.
func (s *Store) Delete(ctx context.Context, dir, name string) error {
	k, err := s.key(dir, name)
	if err != nil {
		return err
	}
	_, err = s.write(ctx, pathOf(dir, name), Write{Key: k, Deleted: true})
	return err
}

// write commits w, with the guard's condition if this path is guarded.
func (s *Store) write(ctx context.Context, path string, w Write) (Written, error) {
	g := guardOf(ctx, path)
	if g != nil {
		w.IfAbsent, w.IfVersion = g.condition()
	}
	written, err := s.chain.Put(ctx, s.cfg.Bucket, w)
	if errors.Is(err, ErrPreconditionFailed) && g != nil {
		g.refuse()
	}
	if err != nil {
		return Written{}, fmt.Errorf("schainfiler: writing %s: %w", path, err)
	}
	return written, nil
}

// Find reads an entry's encoded form (ErrNotFound if none, or deleted).
// Under a guard of this path, the first read fixes the version the write
// will be conditional on.
func (s *Store) Find(ctx context.Context, dir, name string) ([]byte, error) {
	k, err := s.key(dir, name)
	if err != nil {
		return nil, err
	}
	rec, answered := dirAnswerOf(ctx, pathOf(dir, name))
	if !answered {
		rec, err = s.chain.Get(ctx, s.cfg.Bucket, k)
	}
	live := err == nil && !rec.Deleted
	if g := guardOf(ctx, pathOf(dir, name)); g != nil && (err == nil || errors.Is(err, ErrNotFound)) {
		v := uint64(0)
		if live {
			v = rec.Version
		}
		g.saw(v)
	}
	switch {
	case err != nil:
		return nil, err
	case !live:
		return nil, ErrNotFound
	}
	return rec.Attributes, nil
}

// List calls each for the live entries of dir whose names start with
// prefix, in name order, after start (at start too with includeStart), at
// most limit of them, until each says stop. It returns the last name it
// passed to each.
func (s *Store) List(ctx context.Context, dir, start string, includeStart bool, limit int64, prefix string, each func(name string, encoded []byte) (bool, error)) (string, error) {
	base, err := s.key(dir, "")
	if err != nil {
		return "", err
	}
	if err := noNUL(dir, prefix); err != nil {
		return "", err
	}
	last := ""
	if includeStart && start != "" && strings.HasPrefix(start, prefix) && limit > 0 {
		b, err := s.Find(ctx, dir, start)
		switch {
		case err == nil:
			more, err := each(start, b)
			if err != nil || !more {
				return start, err
			}
			last = start
			limit--
		case !errors.Is(err, ErrNotFound):
			return "", err
		}
	}
	after := ""
	if start != "" {
		after = base + start
	}
	for limit > 0 {
		page, err := s.chain.List(ctx, s.cfg.Bucket, base+prefix, after, int(min(limit, int64(s.cfg.PageSize))))
		if err != nil {
			return last, err
		}
		for _, r := range page.Records {
			name := r.Key[len(base):]
			more, err := each(name, r.Attributes)
			if err != nil || !more {
				return name, err
			}
			last = name
			limit--
		}
		if !page.Truncated {
			break
		}
		after = page.Next
	}
	return last, nil
}

// DeleteChildren writes tombstones for every live entry of dir (not of its
// subdirectories: the filer deletes those first).
func (s *Store) DeleteChildren(ctx context.Context, dir string) error {
	base, err := s.key(dir, "")
	if err != nil {
		return err
	}
	sem := make(chan struct{}, s.cfg.Parallel)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	after := ""
	for {
		page, err := s.chain.List(ctx, s.cfg.Bucket, base, after, s.cfg.PageSize)
		if err != nil {
			errs = append(errs, err)
			break
		}
		for _, r := range page.Records {
			sem <- struct{}{}
			wg.Add(1)
			go func(key string) {
				defer func() { <-sem; wg.Done() }()
				if _, err := s.chain.Put(ctx, s.cfg.Bucket, Write{Key: key, Deleted: true}); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}(r.Key)
		}
		if !page.Truncated {
			break
		}
		after = page.Next
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("schainfiler: deleting the entries of %s: %w", dir, err)
	}
	return nil
}

// bindable maps an entry's chunks to S-Chain chunks: those whose file ids
// parse and have bytes, once each, in the entry's order. None when the
// masters' keys do not come from S-Chain. There may be more than a
// manifest binds (keepBound).
func (s *Store) bindable(chunks []FileChunk) []Chunk {
	if s.cfg.KeyPrefix == "" {
		return nil
	}
	out := make([]Chunk, 0, len(chunks))
	seen := make(map[Chunk]bool, len(chunks))
	for _, c := range chunks {
		vid, key, ok := ParseFileID(c.FileID)
		if !ok || c.Size == 0 {
			continue
		}
		ch := Chunk{Range: s.cfg.KeyPrefix + "/keys/" + strconv.FormatUint(uint64(vid/max(s.cfg.VolumeBand, 1)), 10), ID: key}
		if seen[ch] {
			continue
		}
		seen[ch] = true
		ch.Size = c.Size
		out = append(out, ch)
	}
	return out
}

// ParseFileID reads a SeaweedFS file id "<volume>,<key hex><cookie: 8 hex
// digits>" (a "_N" suffix is part of no stored chunk's id).
func ParseFileID(fid string) (volume uint32, key uint64, ok bool) {
	v, kc, found := strings.Cut(fid, ",")
	if !found || len(kc) <= 8 || len(kc) > 24 {
		return 0, 0, false
	}
	vol, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, 0, false
	}
	k, err := strconv.ParseUint(kc[:len(kc)-8], 16, 64)
	if err != nil {
		return 0, 0, false
	}
	return uint32(vol), k, true
}

// KvPut stores a KV value.
func (s *Store) KvPut(ctx context.Context, key, value []byte) error {
	if len(value) > s.cfg.MaxAttributeBytes {
		return fmt.Errorf("%w: a KV value of %d bytes, the chain's txLimits.maxAttributeBytes %d", ErrTooLarge, len(value), s.cfg.MaxAttributeBytes)
	}
	_, err := s.chain.Put(ctx, s.kv, Write{Key: s.kvKey(key), Attributes: value})
	return err
}

// KvGet reads a KV value (ErrKvNotFound if none).
func (s *Store) KvGet(ctx context.Context, key []byte) ([]byte, error) {
	rec, err := s.chain.Get(ctx, s.kv, s.kvKey(key))
	switch {
	case errors.Is(err, ErrNotFound) || (err == nil && rec.Deleted):
		return nil, ErrKvNotFound
	case err != nil:
		return nil, err
	}
	return rec.Attributes, nil
}

// KvDelete deletes a KV value.
func (s *Store) KvDelete(ctx context.Context, key []byte) error {
	_, err := s.chain.Put(ctx, s.kv, Write{Key: s.kvKey(key), Deleted: true})
	return err
}

// kvKey is the manifest key of a KV key: its hex, since KV keys are bytes
// and manifest keys UTF-8.
func (s *Store) kvKey(key []byte) string { return "kv/" + hex.EncodeToString(key) }

// reclaimLoop acknowledges the bucket's released chunks: the filer deletes
// the chunks no entry names any more itself, after every overwrite and
// deletion.
func (s *Store) reclaimLoop() {
	defer s.done.Done()
	t := time.NewTicker(s.cfg.ReclaimEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ReclaimEvery)
		if chunks, err := s.chain.Released(ctx, s.cfg.Bucket, 256); err == nil && len(chunks) > 0 {
			_ = s.chain.Reclaim(ctx, chunks) // the next round tries again
		}
		cancel()
	}
}
