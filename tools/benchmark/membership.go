package benchmark

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/s-chain/schain/api"
)

// membershipPoll is how often a MembershipWatcher asks: several times per
// liveness round of the shortest setting measured (4 s, the genesis
// minimum for the default skew bound), so that no membership goes unseen.
const membershipPoll = 250 * time.Millisecond

// MembershipSample is the membership the next block will have, as a node
// answered at one time. Members are the validators' short names, sorted.
type MembershipSample struct {
	At         time.Time `json:"at"`
	Round      uint64    `json:"round"`
	Generation uint64    `json:"generation"`
	Fallback   bool      `json:"fallback,omitempty"`
	Members    []string  `json:"members"`
}

func (s MembershipSample) same(o MembershipSample) bool {
	return s.Round == o.Round && s.Generation == o.Generation && s.Fallback == o.Fallback && slices.Equal(s.Members, o.Members)
}

// Window is a stretch of wall-clock time (a steady round of one system).
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// CountFlapsIn adds up CountFlaps over windows in which nobody was killed.
func CountFlapsIn(samples []MembershipSample, windows []Window) Flaps {
	var total Flaps
	for _, w := range windows {
		f := CountFlaps(samples, "", time.Time{}, w.From, w.To)
		total.Rounds += f.Rounds
		total.Changes += f.Changes
		total.AliveOut += f.AliveOut
		total.DeadBack += f.DeadBack
		total.Fallbacks += f.Fallbacks
	}
	return total
}

// Flaps is what the liveness rule did to the members during a window: a
// validator that was alive and left the members flapped (its ranges moved
// away and back for nothing); a killed validator that came back after it
// had left bounced (its ranges went back to a dead node).
type Flaps struct {
	// Rounds is the number of liveness rounds observed.
	Rounds uint64 `json:"rounds"`
	// Changes counts membership changes (new generations).
	Changes int `json:"changes"`
	// AliveOut counts alive validators leaving the members.
	AliveOut int `json:"alive_out"`
	// DeadBack counts a killed validator coming back after it had left.
	DeadBack int `json:"dead_back"`
	// Fallbacks counts rounds observed in which nobody was live.
	Fallbacks int `json:"fallbacks"`
}

// CountFlaps reads a watcher's samples from `from` to `to`: dead names the
// validator killed at deadAt ("" if none). Samples of a node that lags behind
// (a generation below one already seen) are skipped.
func CountFlaps(samples []MembershipSample, dead string, deadAt, from, to time.Time) Flaps {
	var (
		f        Flaps
		prev     *MembershipSample
		left     bool // dead has left the members after deadAt
		first    uint64
		fallback = map[uint64]bool{}
	)
	for i := range samples {
		s := &samples[i]
		if s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		if prev == nil {
			first = s.Round
		}
		if s.Fallback {
			fallback[s.Round] = true
		}
		if prev != nil && s.Generation < prev.Generation {
			continue
		}
		f.Rounds = max(f.Rounds, s.Round-first+1)
		if prev != nil && s.Generation != prev.Generation {
			f.Changes++
			for _, m := range prev.Members {
				if slices.Contains(s.Members, m) {
					continue
				}
				if m == dead && !s.At.Before(deadAt) {
					left = true
					continue
				}
				f.AliveOut++
			}
			if left && dead != "" && slices.Contains(s.Members, dead) && !slices.Contains(prev.Members, dead) {
				f.DeadBack++
				left = false
			}
		}
		prev = s
	}
	f.Fallbacks = len(fallback)
	return f
}

// MembershipSource answers getMembership (client.Router does).
type MembershipSource interface {
	GetMembership(ctx context.Context) (*api.MembershipReply, error)
}

// MembershipWatcher records the membership a network answers, every
// membershipPoll, until stopped; unanswered polls are skipped.
type MembershipWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex // guards samples
	samples []MembershipSample
}

// WatchMembership starts watching src; name maps a NodeID string to the
// validator's short name.
func WatchMembership(ctx context.Context, src MembershipSource, name func(nodeID string) string) *MembershipWatcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &MembershipWatcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(membershipPoll)
		defer tick.Stop()
		for {
			pctx, pcancel := context.WithTimeout(ctx, 2*membershipPoll)
			e, err := src.GetMembership(pctx)
			pcancel()
			if err == nil {
				s := MembershipSample{At: time.Now(), Round: e.Round, Generation: e.Generation, Fallback: e.Fallback}
				for _, m := range e.Members {
					s.Members = append(s.Members, name(m.NodeID.String()))
				}
				slices.Sort(s.Members)
				w.mu.Lock()
				if n := len(w.samples); n == 0 || !w.samples[n-1].same(s) {
					w.samples = append(w.samples, s)
				}
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// Stop ends the watch and returns every sample, in order.
func (w *MembershipWatcher) Stop() []MembershipSample {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.samples)
}
