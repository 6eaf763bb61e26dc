package schainseq

import (
	"fmt"
	"log"
	"os"
	"sync"
	"time"
)

// Stock is the SeaweedFS sequencer interface (weed/sequence.Sequencer),
// restated so that this package imports nothing of SeaweedFS. NextFileId has
// no error: see NextFileId below for how an error reaches the assign reply.
type Stock interface {
	NextFileId(count uint64) uint64
	SetMax(seenValue uint64)
}

// VolumeSequencer is a sequencer that needs the volume a key is for and can
// fail. The patched Topology.PickForWrite calls it through NextFileId.
type VolumeSequencer interface {
	NextFileIdForVolume(vid uint32, count uint64) (uint64, error)
}

// VolumeAllocator is a sequencer that also issues volume ids. The patched
// Topology.NextVolumeId calls it through NextVolumeId.
type VolumeAllocator interface {
	NextVolumeId(currentMax uint32) (uint32, error)
}

// New returns the sequencer of type seqType configured by the
// [master.sequencer] table, given stock, the sequencer the master built for
// it (the memory sequencer for raft and the S-Chain types). Without S-Chain
// type and floors it returns stock itself: stock behaviour, byte for byte.
// The patched createSequencer calls it; an error stops the master's start.
func New(seqType, master, metaDir string, table map[string]any, stock Stock) (Stock, error) {
	cfg, err := ParseConfig(withType(table, seqType), metaDir)
	if err != nil {
		return nil, err
	}
	logf := newLogf()
	var floored Stock = stock
	if cfg.FileKeyFloor > 0 || cfg.VolumeIDFloor > 0 {
		floored = newFloored(stock, cfg.FileKeyFloor, cfg.VolumeIDFloor)
		logf("stock sequencer floored: file keys from %d, new volume ids from %d", cfg.FileKeyFloor, cfg.VolumeIDFloor)
	}
	switch cfg.Type {
	case TypeSChain, TypeLeaderless, TypeRaftless:
		return newSChain(cfg, master, logf)
	case TypeShadow:
		return newShadow(cfg, master, floored, logf)
	default:
		return floored, nil
	}
}

func withType(table map[string]any, seqType string) map[string]any {
	out := make(map[string]any, len(table)+1)
	for k, v := range table {
		out[k] = v
	}
	out["type"] = seqType
	return out
}

// NextFileId is the patched PickForWrite's call: count keys for a file on
// volume vid. A VolumeSequencer may fail, and its error is returned by
// PickForWrite, whose callers (the HTTP /dir/assign handler and the gRPC
// Assign) retry picks for up to their 10 s assign deadline and then send the
// last error to the client (HTTP 406 {"error": ...}, or the gRPC error). Any
// other sequencer is called as the stock code did.
func NextFileId(seq Stock, vid uint32, count uint64) (uint64, error) {
	if vs, ok := seq.(VolumeSequencer); ok {
		return vs.NextFileIdForVolume(vid, count)
	}
	return seq.NextFileId(count), nil
}

// NextVolumeId is the patched Topology.NextVolumeId's call: the id of a new
// volume given the cluster's current max. Stock: currentMax+1.
func NextVolumeId(seq Stock, currentMax uint32) (uint32, error) {
	if va, ok := seq.(VolumeAllocator); ok {
		return va.NextVolumeId(currentMax)
	}
	return currentMax + 1, nil
}

// Prime starts the first reservation of volume vid's keys for an S-Chain
// sequencer that holds none (no-op otherwise, and for any other
// sequencer). The patched master calls it for every writable volume a
// heartbeat reports, so that a leaderless master a client turns to after
// another master's death finds keys committed for the volumes it never
// assigned yet, instead of waiting a block for them.
func Prime(seq Stock, vid uint32) {
	if s, ok := seq.(*SChain); ok {
		s.keyPool(vid).Prime()
	}
}

// floored is the stock sequencer started at rollback floors: its keys
// start at keyFloor (SetMax(keyFloor-1) at start, and it never goes back)
// and new volume ids at volumeFloor.
type floored struct {
	Stock
	volumeFloor uint32
}

var (
	_ Stock           = (*floored)(nil)
	_ VolumeAllocator = (*floored)(nil)
)

func newFloored(stock Stock, keyFloor uint64, volumeFloor uint32) *floored {
	if keyFloor > 0 {
		stock.SetMax(keyFloor - 1)
	}
	return &floored{Stock: stock, volumeFloor: volumeFloor}
}

func (f *floored) NextVolumeId(currentMax uint32) (uint32, error) {
	return max(currentMax+1, f.volumeFloor), nil
}

// newLogf logs to the master's standard error with this package's prefix,
// at most once per 10 s per format (with the number of lines suppressed), so
// that an unreachable S-Chain does not flood the log.
func newLogf() func(format string, args ...any) {
	l := log.New(os.Stderr, "schainseq: ", log.LstdFlags|log.Lmicroseconds)
	var mu sync.Mutex
	type entry struct {
		at         time.Time
		suppressed int
	}
	last := make(map[string]*entry)
	return func(format string, args ...any) {
		mu.Lock()
		e := last[format]
		now := time.Now()
		if e != nil && now.Sub(e.at) < 10*time.Second {
			e.suppressed++
			mu.Unlock()
			return
		}
		suppressed := 0
		if e != nil {
			suppressed = e.suppressed
		}
		last[format] = &entry{at: now}
		mu.Unlock()
		msg := fmt.Sprintf(format, args...)
		if suppressed > 0 {
			msg += fmt.Sprintf(" (%d similar lines suppressed)", suppressed)
		}
		l.Print(msg)
	}
}
