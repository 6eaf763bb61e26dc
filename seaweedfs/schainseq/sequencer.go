package schainseq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/reservation"
)

// ErrNoCutover: S-Chain holds no cutover floor for this cluster's prefix, so
// nothing says which ids the legacy allocator already used. Type schain
// refuses to hand out ids until `schain seaweedfs cutover` recorded one.
var ErrNoCutover = errors.New("no cutover recorded on S-Chain")

// SChain is the sequencer of type schain: file keys from the committed
// reservations of each volume's range, volume ids from the volume range's.
type SChain struct {
	cfg    Config
	client *chainClient
	logf   func(string, ...any)
	ctx    context.Context
	stop   context.CancelFunc

	mu      sync.RWMutex                         // guards keys
	keys    map[uint32]*reservation.Pool[string] // by band (volume id / VolumeBand); Ref is the reservation's TxID
	volumes *reservation.Pool[string]

	heartbeatMax atomic.Uint64
	started      time.Time // when the master built it: its warm-up starts
	// self is the master's own address (ip:port.grpcPort): the name it
	// holds leases under, and the leader a raftless master names.
	self string
}

var (
	_ Stock           = (*SChain)(nil)
	_ VolumeSequencer = (*SChain)(nil)
	_ VolumeAllocator = (*SChain)(nil)
)

func newSChain(cfg Config, self string, logf func(string, ...any)) (*SChain, error) {
	c, err := newChainClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &SChain{cfg: cfg, client: c, logf: logf, ctx: ctx, stop: stop, keys: make(map[uint32]*reservation.Pool[string]), started: time.Now(), self: self}
	s.volumes = reservation.New(ctx, VolumeRange(cfg.Prefix), s.reserver(VolumeRange(cfg.Prefix), VolumeFloorRange(cfg.Prefix)),
		s.poolConfig(cfg.VolumeBatch, cfg.VolumeBatch))
	logf("type %s: file keys from %s/keys/<volume/%d>, volume ids from %s, through %d S-Chain nodes of chain %s%s",
		cfg.Type, cfg.Prefix, cfg.VolumeBand, VolumeRange(cfg.Prefix), len(cfg.RPC), cfg.Chain, modeNote(cfg))
	go s.report()
	return s, nil
}

// Close stops background reservations.
func (s *SChain) Close() { s.stop() }

// poolConfig sizes a pool's reservations within [least, most] by the
// range's rate. A request finding no key fails at once while a refill
// failed within the last second, or while the refill in flight already
// outlasted its whole wait: the master's assign loop then picks another
// volume instead of waiting on a slow chain or a dead owner.
func (s *SChain) poolConfig(least, most uint64) reservation.Config {
	return reservation.Config{
		Min: least, Max: most, Horizon: s.cfg.Horizon, Timeout: s.cfg.RefillTimeout,
		RetryAfter: time.Second, FailFast: true, Logf: s.logf,
	}
}

// reserver reserves ids of rng at or above both the cutover floor recorded
// in floorRange and from.
func (s *SChain) reserver(rng, floorRange string) reservation.Reserve[string] {
	return func(ctx context.Context, count, from uint64) (reservation.Reservation[string], error) {
		floor, err := s.client.Floor(ctx, floorRange)
		if err != nil {
			return reservation.Reservation[string]{}, fmt.Errorf("reading the cutover floor %s: %w", floorRange, err)
		}
		if floor == 0 {
			return reservation.Reservation[string]{}, fmt.Errorf("%w for prefix %q (range %s is empty): run `schain seaweedfs cutover`", ErrNoCutover, s.cfg.Prefix, floorRange)
		}
		res, err := s.client.Reserve(ctx, rng, count, max(floor, from), s.cfg.Final)
		return reservation.Reservation[string]{Base: res.Base, Count: res.Count, Ref: res.TxID}, err
	}
}

func (s *SChain) keyPool(vid uint32) *reservation.Pool[string] {
	band := vid / s.cfg.VolumeBand
	s.mu.RLock()
	p, ok := s.keys[band]
	s.mu.RUnlock()
	if ok {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok = s.keys[band]
	if !ok {
		rng := KeyRange(s.cfg.Prefix, vid, s.cfg.VolumeBand)
		p = reservation.New(s.ctx, rng, s.reserver(rng, KeyFloorRange(s.cfg.Prefix)), s.poolConfig(s.cfg.ReservationMin, MaxReservation))
		s.keys[band] = p
	}
	return p
}

// NextFileIdForVolume implements VolumeSequencer: count consecutive keys
// of volume vid's range, from a committed reservation. With none left it
// waits for the reservation in flight at most Config.Wait, then fails
// (reservation.ErrEmpty, or ErrRefill with the reservation's error) naming
// the range and why; it never makes a key up. Keys start at 1.
func (s *SChain) NextFileIdForVolume(vid uint32, count uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Wait)
	defer cancel()
	got, err := s.keyPool(vid).Take(ctx, max(count, 1), 1)
	if err != nil {
		return 0, fmt.Errorf("schain sequencer: volume %d: %w", vid, err)
	}
	return got.Base, nil
}

// NextVolumeId implements VolumeAllocator: a committed volume id above
// currentMax (ids at or below it, which only a missing cutover leaves, are
// skipped), and a first key reservation for the new volume, so that its
// first assign does not wait.
func (s *SChain) NextVolumeId(currentMax uint32) (uint32, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RefillTimeout)
	defer cancel()
	got, err := s.volumes.Take(ctx, 1, uint64(currentMax)+1)
	if err != nil {
		return 0, fmt.Errorf("schain sequencer: new volume id: %w", err)
	}
	id := got.Base
	if id > math.MaxUint32 {
		return 0, fmt.Errorf("schain sequencer: S-Chain volume id %d does not fit 32 bits", id)
	}
	s.keyPool(uint32(id)).Prime()
	return uint32(id), nil
}

// NextFileId is never called by the patched master: PickForWrite calls
// NextFileIdForVolume (and the build checks that nothing else in SeaweedFS
// calls NextFileId). It cannot return an error, so it panics rather than
// make a key up.
func (s *SChain) NextFileId(count uint64) uint64 {
	panic("schainseq: NextFileId without a volume: this SeaweedFS calls the sequencer outside the patched PickForWrite; rebuild with scripts/build-weed.sh")
}

// SetMax records the highest key volume servers report written. S-Chain
// keys do not need it (the cutover floor is on chain); it is logged.
func (s *SChain) SetMax(seen uint64) { raise(&s.heartbeatMax, seen) }

// report logs the pools' counters every minute while they change.
func (s *SChain) report() {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	var last reservation.Stats
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		var sum reservation.Stats
		s.mu.RLock()
		pools := make([]*reservation.Pool[string], 0, len(s.keys))
		for _, p := range s.keys {
			pools = append(pools, p)
		}
		s.mu.RUnlock()
		for _, p := range pools {
			st := p.Stats()
			sum.Taken += st.Taken
			sum.Skipped += st.Skipped
			sum.Refills += st.Refills
			sum.Failures += st.Failures
			sum.Waits += st.Waits
			sum.FastFails += st.FastFails
			sum.Left += st.Left
		}
		if sum != last {
			s.logf("%d key ranges: %d keys handed out, %d reservations, %d failed, %d waits, %d picks refused while a reservation was late, %d keys reserved and unused, heartbeat max key %d",
				len(pools), sum.Taken, sum.Refills, sum.Failures, sum.Waits, sum.FastFails, sum.Left, s.heartbeatMax.Load())
			last = sum
		}
	}
}
