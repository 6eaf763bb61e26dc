package schainseq

import (
	"context"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"
)

// Shadow is the sequencer of type schain-shadow: the stock sequencer
// serves, and every allocation is mirrored to S-Chain off the assign path.
//
// Offering a mirror never blocks: each range belongs to one worker (so a
// range's mirrors are sent, and recorded, in issue order), each worker has a
// bounded queue, and a mirror offered to a full queue is dropped and counted.
// File keys are mirrored as pooled allocations (answered from the owner's
// committed pool, no block round trip) within ShadowTimeout; the mirrors of
// one range waiting in a queue go as one allocation of their total (group
// commit: under load a worker sends what queued during its last request),
// split back in issue order, so that the mirror keeps up with the master.
// Volume ids, rare, are mirrored one by one as allocations waited for
// (within RefillTimeout), so that the volume range is not advanced by a
// whole pool per mirror.
type Shadow struct {
	stock  Stock
	cfg    Config
	client *chainClient
	master string
	term   uint64
	logf   func(string, ...any)
	queues []chan mirror
	pairs  *pairWriter
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	// issue serialises the stock sequencer's answers with their offers, so
	// that the order of mirrors (Pair.Seq) is the order of the stock keys.
	issue sync.Mutex

	offered, dropped, mirrored, failed, unrouted atomic.Uint64
	legacyMaxKey, heartbeatMax                   atomic.Uint64
	maxVolume                                    atomic.Uint32
}

var (
	_ Stock           = (*Shadow)(nil)
	_ VolumeSequencer = (*Shadow)(nil)
	_ VolumeAllocator = (*Shadow)(nil)
)

// mirror is one allocation waiting to be mirrored.
type mirror struct {
	kind   string
	rng    string
	volume uint32
	legacy LegacyAnswer
	at     time.Time // when the stock sequencer answered
	seq    uint64    // the stock sequencer's order in this process
}

func newShadow(cfg Config, master string, stock Stock, logf func(string, ...any)) (*Shadow, error) {
	c, err := newChainClient(cfg)
	if err != nil {
		return nil, err
	}
	pw, err := newPairWriter(cfg.PairsDir, cfg.PairsMaxBytes, logf)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Shadow{
		stock: stock, cfg: cfg, client: c, master: master, term: uint64(time.Now().UnixNano()),
		logf: logf, pairs: pw, ctx: ctx, stop: stop,
	}
	per := cfg.ShadowQueue / cfg.ShadowWorkers
	for range cfg.ShadowWorkers {
		q := make(chan mirror, per)
		s.queues = append(s.queues, q)
		s.wg.Add(1)
		go s.work(q)
	}
	go pw.run(s.State, master, s.term)
	logf("type %s: mirroring to %d S-Chain nodes of chain %s, ranges %s/..., pairs in %s",
		TypeShadow, len(cfg.RPC), cfg.Chain, cfg.Prefix, pw.path())
	return s, nil
}

// Close stops the workers (mirrors still queued are not sent) and flushes
// the pairs file; mirrors offered afterwards are dropped.
func (s *Shadow) Close() {
	s.stop()
	s.wg.Wait()
	close(s.pairs.in)
	<-s.pairs.done
}

// NextFileIdForVolume implements VolumeSequencer: the stock key, mirrored.
// It never fails.
func (s *Shadow) NextFileIdForVolume(vid uint32, count uint64) (uint64, error) {
	s.issue.Lock()
	defer s.issue.Unlock()
	t0 := time.Now()
	key := s.stock.NextFileId(count)
	ns := time.Since(t0).Nanoseconds()
	raise(&s.legacyMaxKey, key+count-1)
	s.offer(mirror{kind: KindKey, rng: KeyRange(s.cfg.Prefix, vid, s.cfg.VolumeBand), volume: vid,
		legacy: LegacyAnswer{First: key, Count: count, NS: ns}, at: t0})
	return key, nil
}

// NextFileId implements Stock: the stock key, not mirrored (no volume is
// known; the patched master never calls it).
func (s *Shadow) NextFileId(count uint64) uint64 {
	s.unrouted.Add(1)
	key := s.stock.NextFileId(count)
	raise(&s.legacyMaxKey, key+count-1)
	return key
}

// NextVolumeId implements VolumeAllocator: the stock volume id, mirrored.
func (s *Shadow) NextVolumeId(currentMax uint32) (uint32, error) {
	s.issue.Lock()
	defer s.issue.Unlock()
	t0 := time.Now()
	id, err := NextVolumeId(s.stock, currentMax)
	if err != nil {
		return 0, err
	}
	for cur := s.maxVolume.Load(); id > cur && !s.maxVolume.CompareAndSwap(cur, id); cur = s.maxVolume.Load() {
	}
	s.offer(mirror{kind: KindVolume, rng: VolumeRange(s.cfg.Prefix), volume: id,
		legacy: LegacyAnswer{First: uint64(id), Count: 1, NS: time.Since(t0).Nanoseconds()}, at: t0})
	return id, nil
}

// SetMax implements Stock.
func (s *Shadow) SetMax(seen uint64) {
	s.stock.SetMax(seen)
	raise(&s.heartbeatMax, seen)
}

// State returns the counters.
func (s *Shadow) State() ShadowState {
	return ShadowState{
		Offered: s.offered.Load(), Dropped: s.dropped.Load(), Mirrored: s.mirrored.Load(), Failed: s.failed.Load(),
		Unrouted: s.unrouted.Load(), LegacyMaxKey: s.legacyMaxKey.Load(), HeartbeatMaxKey: s.heartbeatMax.Load(),
		MaxVolumeID: s.maxVolume.Load(),
	}
}

// offer queues a mirror without blocking; s.issue is held, so that the
// sequence numbers follow the stock sequencer's order.
func (s *Shadow) offer(m mirror) {
	m.seq = s.offered.Add(1)
	h := fnv.New32a()
	_, _ = h.Write([]byte(m.rng))
	select {
	case s.queues[int(h.Sum32()%uint32(len(s.queues)))] <- m:
	default:
		if s.dropped.Add(1) == 1 {
			s.logf("mirror queue full: dropping mirrors (counted in the pairs file's state lines)")
		}
	}
}

// maxBatchIDs bounds the ids of one mirrored batch (the pooled path takes
// at most poolChunk/4 ids per request; 4096 fits any pool of 16,384 ids or
// more).
const maxBatchIDs = 4096

func (s *Shadow) work(q chan mirror) {
	defer s.wg.Done()
	var held *mirror // taken from the queue while batching, sent next
	for {
		var m mirror
		if held != nil {
			m, held = *held, nil
		} else {
			select {
			case <-s.ctx.Done():
				return
			case m = <-q:
			}
		}
		batch := []mirror{m}
		if m.kind == KindKey {
			batch, held = s.gather(q, batch)
		}
		for _, p := range s.send(batch) {
			s.pairs.in <- p
		}
	}
}

// gather adds the file-key mirrors of batch[0]'s range queued right behind
// it (first in first out, up to maxBatchIDs ids), so that one pooled
// allocation mirrors them all; the first mirror of another range or kind
// ends the batch and is returned to be sent next.
func (s *Shadow) gather(q chan mirror, batch []mirror) ([]mirror, *mirror) {
	ids := batch[0].legacy.Count
	for {
		select {
		case n := <-q:
			if n.kind != KindKey || n.rng != batch[0].rng || ids+n.legacy.Count > maxBatchIDs {
				return batch, &n
			}
			batch = append(batch, n)
			ids += n.legacy.Count
		default:
			return batch, nil
		}
	}
}

// send mirrors a batch of allocations of one range with one S-Chain
// request and returns a pair per allocation: the S-Chain answer
// [base, base+total) is split in issue order, each allocation getting as
// many consecutive ids as the stock sequencer gave it.
func (s *Shadow) send(batch []mirror) []Pair {
	m := batch[0]
	var total uint64
	for _, b := range batch {
		total += b.legacy.Count
	}
	t0 := time.Now()
	timeout := s.cfg.ShadowTimeout
	if m.kind == KindVolume {
		timeout = s.cfg.RefillTimeout // waits for a block, and volumes are rare
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	var (
		res Reservation
		err error
	)
	if m.kind == KindVolume {
		res, err = s.client.Reserve(ctx, m.rng, total, 0, false)
	} else {
		res, err = s.client.Pooled(ctx, m.rng, total)
	}
	missing := ctx.Err() != nil
	cancel()
	at, took := time.Now(), time.Since(t0).Nanoseconds()
	if err != nil && !missing {
		s.logf("mirror to S-Chain failed: %v", err)
	}
	out := make([]Pair, len(batch))
	next := res.Base
	for i, b := range batch {
		p := Pair{
			Seq: b.seq, Issued: b.at, At: at, Master: s.master, Term: s.term, Kind: b.kind, Range: b.rng, Volume: b.volume,
			Legacy: &b.legacy, SChainNS: took, QueuedNS: t0.Sub(b.at).Nanoseconds(), Batch: len(batch),
		}
		switch {
		case err == nil:
			r := res
			r.Base, r.Count = next, b.legacy.Count
			next += b.legacy.Count
			p.SChain = &r
			s.mirrored.Add(1)
		case missing:
			p.Missing, p.Error = true, err.Error()
			s.failed.Add(1)
		default:
			p.Error = err.Error()
			s.failed.Add(1)
		}
		out[i] = p
	}
	return out
}

func raise(v *atomic.Uint64, x uint64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}
