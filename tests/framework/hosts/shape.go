package hosts

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Shape is what a host's link does to every packet the host sends: a
// delay, uniform jitter around it, and a loss probability in parts per
// million. The zero Shape leaves packets alone.
//
// This is tc netem's delay/jitter/loss, done in user space with an
// NFQUEUE rule on the host's link (iptables) and verdicts given late:
// netem is not in every kernel (not in this machine's), nfnetlink_queue
// is in Debian's and most. Packets keep their order (a packet is never
// released before the one sent before it, as netem does with a rate),
// so jitter does not reorder TCP segments.
type Shape struct {
	Delay  time.Duration `json:"delay"`
	Jitter time.Duration `json:"jitter"`
	// LossPPM is the share of packets dropped, in millionths.
	LossPPM uint32 `json:"lossPPM"`
}

// IsZero reports whether the shape changes nothing.
func (s Shape) IsZero() bool { return s == Shape{} }

func (s Shape) String() string {
	if s.IsZero() {
		return "none"
	}
	return fmt.Sprintf("delay %v ± %v, loss %.4f%%", s.Delay, s.Jitter, float64(s.LossPPM)/1e4)
}

// ErrShape: a shape out of bounds.
var ErrShape = errors.New("hosts: invalid shape")

func (s Shape) verify() error {
	if s.Delay < 0 || s.Jitter < 0 || s.Jitter > s.Delay || s.LossPPM > 1_000_000 || s.Delay > time.Minute {
		return fmt.Errorf("%w: %s (delay 0..1m, jitter at most the delay, loss at most 100%%)", ErrShape, s)
	}
	return nil
}

// shaper holds one queue's packets for their shape's delay. A reader
// goroutine takes the queued packets in order and a releaser accepts them
// when due; the shape can change at any time.
type shaper struct {
	q     *queue
	shape atomic.Pointer[Shape]
	held  chan held
	rng   *rand.Rand
	done  chan struct{}
	wg    sync.WaitGroup
	// Held counts packets delayed, Dropped packets lost on purpose.
	Held, Dropped atomic.Uint64
}

type held struct {
	id  uint32
	due time.Time
}

func newShaper(q *queue, s Shape, seed uint64) *shaper {
	sh := &shaper{q: q, held: make(chan held, queueMaxLen), rng: rand.New(rand.NewPCG(seed, 29)), done: make(chan struct{})}
	sh.shape.Store(&s)
	sh.wg.Add(2)
	go sh.readLoop()
	go sh.releaseLoop()
	return sh
}

func (sh *shaper) set(s Shape) { sh.shape.Store(&s) }

// readLoop decides each packet's fate as it is queued: dropped now, or
// held until due (never before the packet ahead of it).
func (sh *shaper) readLoop() {
	defer sh.wg.Done()
	defer close(sh.held)
	var ids []uint32
	var last time.Time
	for {
		select {
		case <-sh.done:
			return
		default:
		}
		var err error
		if ids, err = sh.q.read(ids[:0]); err != nil {
			continue // the receive timeout, or a message lost
		}
		now := time.Now()
		s := sh.shape.Load()
		for _, id := range ids {
			if s.LossPPM > 0 && sh.rng.Uint32N(1_000_000) < s.LossPPM {
				_ = sh.q.verdict(id, nfDrop)
				sh.Dropped.Add(1)
				continue
			}
			d := s.Delay
			if s.Jitter > 0 {
				d += time.Duration(sh.rng.Int64N(int64(2*s.Jitter)+1)) - s.Jitter
			}
			due := now.Add(d)
			if due.Before(last) {
				due = last
			}
			last = due
			sh.Held.Add(1)
			sh.held <- held{id: id, due: due}
		}
	}
}

// releaseLoop accepts packets as they fall due: every packet due by then
// in one batch verdict.
func (sh *shaper) releaseLoop() {
	defer sh.wg.Done()
	var pending *held // the first packet not yet released
	for {
		if pending == nil {
			h, ok := <-sh.held
			if !ok {
				return
			}
			pending = &h
		}
		if wait := time.Until(pending.due); wait > 0 {
			time.Sleep(wait)
		}
		upTo, now := pending.id, time.Now()
		pending = nil
	drain:
		for {
			select {
			case h, ok := <-sh.held:
				if !ok {
					_ = sh.q.acceptUpTo(upTo)
					return
				}
				if h.due.After(now) {
					pending = &h
					break drain
				}
				upTo = h.id
			default:
				break drain
			}
		}
		_ = sh.q.acceptUpTo(upTo)
	}
}

// close stops the loops (the reader sees done within its receive
// timeout), then the queue: the kernel drops what it still holds, and TCP
// sends it again.
func (sh *shaper) close() {
	close(sh.done)
	sh.wg.Wait()
	_ = sh.q.close()
}
