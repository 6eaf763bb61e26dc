// Package schain registers the S-Chain filer store ([schain] in
// filer.toml): the SeaweedFS side of package schainfiler, which holds the
// store's logic.
package schain

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/sequence/schainseq/schainfiler"
	"github.com/seaweedfs/seaweedfs/weed/stats"
	"github.com/seaweedfs/seaweedfs/weed/util"
)

func init() {
	filer.Stores = append(filer.Stores, &Store{})
}

// Store is a filer.FilerStore on S-Chain.
type Store struct {
	s *schainfiler.Store
}

var _ filer.FilerStore = (*Store)(nil)

// GetName is the store's table in filer.toml.
func (*Store) GetName() string { return "schain" }

// Initialize opens the store filer.toml's [schain] table describes.
func (st *Store) Initialize(configuration util.Configuration, prefix string) error {
	s, err := schainfiler.Open(func(key string) string { return configuration.GetString(prefix + key) })
	if err != nil {
		return err
	}
	glog.V(0).Infof("filer store schain: entries on S-Chain (%s)", configuration.GetString(prefix+"rpc"))
	st.s = s
	st.export()
	return nil
}

// export serves the store's exchanges with S-Chain in the filer's metrics
// (SeaweedFS_filerStore_schain_calls_total, by call: get, put, list): what
// each filer call costs the nodes, beside the filer's own count of store
// calls, some of which make no exchange or several.
func (st *Store) export() {
	for call, n := range map[string]func(schainfiler.Calls) uint64{
		"get":  func(c schainfiler.Calls) uint64 { return c.Gets },
		"put":  func(c schainfiler.Calls) uint64 { return c.Puts },
		"list": func(c schainfiler.Calls) uint64 { return c.Lists },
	} {
		err := stats.Gather.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: stats.Namespace, Subsystem: "filerStore", Name: "schain_calls_total",
			Help:        "Exchanges of the S-Chain filer store with the nodes, by call.",
			ConstLabels: prometheus.Labels{"call": call},
		}, func() float64 { return float64(n(st.s.Calls())) }))
		if err != nil {
			glog.Warningf("filer store schain: no metrics of its exchanges: %v", err)
		}
	}
}

// InsertEntry writes the entry's manifest (conditional under a guard).
func (st *Store) InsertEntry(ctx context.Context, entry *filer.Entry) error {
	meta, err := entry.EncodeAttributesAndChunks()
	if err != nil {
		return err
	}
	if len(entry.GetChunks()) > filer.CountEntryChunksForGzip {
		meta = util.MaybeGzipData(meta)
	}
	chunks := make([]schainfiler.FileChunk, 0, len(entry.GetChunks()))
	for _, c := range entry.GetChunks() {
		chunks = append(chunks, schainfiler.FileChunk{FileID: c.GetFileIdString(), Size: c.Size})
	}
	dir, name := entry.DirAndName()
	return st.s.Put(ctx, dir, name, meta, chunks, len(entry.HardLinkId) > 0)
}

// UpdateEntry is InsertEntry: a manifest write replaces the entry.
func (st *Store) UpdateEntry(ctx context.Context, entry *filer.Entry) error {
	return st.InsertEntry(ctx, entry)
}

// FindEntry reads the entry at fullpath.
func (st *Store) FindEntry(ctx context.Context, fullpath util.FullPath) (*filer.Entry, error) {
	dir, name := fullpath.DirAndName()
	meta, err := st.s.Find(ctx, dir, name)
	if errors.Is(err, schainfiler.ErrNotFound) {
		return nil, filer_pb.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return decode(fullpath, meta)
}

func decode(fullpath util.FullPath, meta []byte) (*filer.Entry, error) {
	entry := &filer.Entry{FullPath: fullpath}
	if err := entry.DecodeAttributesAndChunks(util.MaybeDecompressData(meta)); err != nil {
		return nil, err
	}
	return entry, nil
}

// DeleteEntry writes the entry's tombstone.
func (st *Store) DeleteEntry(ctx context.Context, fullpath util.FullPath) error {
	dir, name := fullpath.DirAndName()
	return st.s.Delete(ctx, dir, name)
}

// DeleteFolderChildren writes tombstones for the folder's entries.
func (st *Store) DeleteFolderChildren(ctx context.Context, fullpath util.FullPath) error {
	return st.s.DeleteChildren(ctx, string(fullpath))
}

// ListDirectoryEntries lists a directory in name order.
func (st *Store) ListDirectoryEntries(ctx context.Context, dirPath util.FullPath, startFileName string, includeStartFile bool, limit int64, eachEntryFunc filer.ListEachEntryFunc) (string, error) {
	return st.ListDirectoryPrefixedEntries(ctx, dirPath, startFileName, includeStartFile, limit, "", eachEntryFunc)
}

// ListDirectoryPrefixedEntries lists the entries whose names start with
// prefix.
func (st *Store) ListDirectoryPrefixedEntries(ctx context.Context, dirPath util.FullPath, startFileName string, includeStartFile bool, limit int64, prefix string, eachEntryFunc filer.ListEachEntryFunc) (string, error) {
	return st.s.List(ctx, string(dirPath), startFileName, includeStartFile, limit, prefix, func(name string, meta []byte) (bool, error) {
		entry, err := decode(dirPath.Child(name), meta)
		if err != nil {
			return false, err
		}
		return eachEntryFunc(entry)
	})
}

// BeginTransaction is a no-op: each write commits on its own.
func (*Store) BeginTransaction(ctx context.Context) (context.Context, error) { return ctx, nil }

// CommitTransaction is a no-op.
func (*Store) CommitTransaction(context.Context) error { return nil }

// RollbackTransaction is a no-op.
func (*Store) RollbackTransaction(context.Context) error { return nil }

// KvPut stores a value in the reserved bucket.
func (st *Store) KvPut(ctx context.Context, key, value []byte) error {
	return st.s.KvPut(ctx, key, value)
}

// KvGet reads a value of the reserved bucket.
func (st *Store) KvGet(ctx context.Context, key []byte) ([]byte, error) {
	v, err := st.s.KvGet(ctx, key)
	if errors.Is(err, schainfiler.ErrKvNotFound) {
		return nil, filer.ErrKvNotFound
	}
	return v, err
}

// KvDelete deletes a value of the reserved bucket.
func (st *Store) KvDelete(ctx context.Context, key []byte) error {
	return st.s.KvDelete(ctx, key)
}

// Shutdown stops the store's background work.
func (st *Store) Shutdown() { st.s.Close() }
