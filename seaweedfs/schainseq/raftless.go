package schainseq

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Raftless masters (type schain-raftless) are leaderless masters that run
// no raft at all: every Topology.IsLeader() call answers yes (Leads), every
// master names itself as the leader (Self), so clients stay with the master
// they reach and move to the next one on an error, and what needs one
// coordinator takes an S-Chain lease instead of raft's leader:
//
//   - the admin shell lock (LeaseAdminToken and friends) is the lease of
//     <prefix>/lock/<name>, held by the shell's name; its fencing token is
//     the lock's token, and S-Chain refuses it on the first renewal after
//     the lease expired (a shell killed or paused past the TTL);
//   - a volume is vacuumed only by the master holding the lease of
//     <prefix>/vacuum/<volume id> (HoldVacuum), which checks its token on
//     S-Chain before it commits the compaction;
//   - the topology id is the chain's (TopologyId), the same on every master;
//   - volume ids and file keys come from S-Chain reservations, as for every
//     leaderless master.

// Raftless reports whether seq is a raftless master's sequencer.
func Raftless(seq any) bool {
	s, ok := seq.(*SChain)
	return ok && s.cfg.Type == TypeRaftless
}

// Self is a raftless master's own address, the leader it names to every
// client and volume server (ok false for any other master).
func Self(seq any) (string, bool) {
	if !Raftless(seq) {
		return "", false
	}
	return seq.(*SChain).self, true
}

// TopologyId is a raftless master's topology id (ok false for any other
// master): a UUID-shaped digest of the chain ID and the cluster's prefix,
// so every master of the cluster has the same one without exchanging it,
// and another cluster (prefix) or chain has another.
func TopologyId(seq any) (string, bool) {
	if !Raftless(seq) {
		return "", false
	}
	cfg := seq.(*SChain).cfg
	h := sha256.Sum256([]byte("seaweedfs-topology\x00" + cfg.Chain + "\x00" + cfg.Prefix))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]), true
}

// LockRange is the range whose lease is admin lock name of the cluster.
func LockRange(prefix, name string) string { return prefix + "/lock/" + rangeSegment(name) }

// VacuumRange is the range whose lease is volume vid's vacuum.
func VacuumRange(prefix string, vid uint32) string { return fmt.Sprintf("%s/vacuum/%d", prefix, vid) }

// rangeSegment makes s one segment of a range name: printable ASCII
// without spaces or slashes.
func rangeSegment(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' || r == '/' {
			return '_'
		}
		return r
	}, s)
}

// ErrLockLost answers a shell's renewal of an admin lock it no longer holds.
var ErrLockLost = errors.New("admin lock lost: its S-Chain lease expired or was taken over (run lock again)")

// LeaseAdminToken is a raftless master's LeaseAdminToken (ok false for any
// other master, which keeps stock's lock). A request without a previous
// token takes the lock if nobody holds it; one with a token renews that
// grant, and fails with ErrLockLost once it is no longer the lock's: a lost
// grant is never silently replaced by a new one, since someone else may
// have held the lock in between. The token is the lease's fencing token,
// lockTsNs the time of this answer.
func LeaseAdminToken(ctx context.Context, seq any, lockName, client string, previous int64) (token, lockTsNs int64, ok bool, err error) {
	if !Raftless(seq) {
		return 0, 0, false, nil
	}
	s := seq.(*SChain)
	rng := LockRange(s.cfg.Prefix, lockName)
	holder := rangeSegment(client)
	var l Lease
	if previous == 0 {
		l, err = s.client.AcquireLease(ctx, rng, holder, s.cfg.LockTTL)
	} else {
		l, err = s.client.RenewLease(ctx, Lease{Range: rng, Holder: holder, Token: uint64(previous)}, s.cfg.LockTTL)
	}
	var le *LeaseError
	switch {
	case errors.As(err, &le) && le.Held:
		return 0, 0, true, fmt.Errorf("already locked by %v (S-Chain lease %s, token %d)", le.Standing.Holder, rng, le.Standing.Token)
	case errors.As(err, &le):
		s.logf("admin lock %s: %s's token %d refused: %v", lockName, holder, previous, err)
		return 0, 0, true, fmt.Errorf("%w: %w", ErrLockLost, err)
	case err != nil:
		return 0, 0, true, fmt.Errorf("admin lock %s on S-Chain: %w", lockName, err)
	}
	if previous == 0 {
		s.logf("admin lock %s: granted to %s, token %d, until %d ms", lockName, holder, l.Token, l.ExpiresMs)
	}
	return int64(l.Token), time.Now().UnixNano(), true, nil
}

// ReleaseAdminToken is a raftless master's ReleaseAdminToken (ok false for
// any other master): it ends the grant token, if it is still the lock's.
func ReleaseAdminToken(ctx context.Context, seq any, lockName string, token int64) (ok bool, err error) {
	if !Raftless(seq) {
		return false, nil
	}
	s := seq.(*SChain)
	l, held, err := s.client.LeaseOf(ctx, LockRange(s.cfg.Prefix, lockName))
	if err != nil || !held || l.Token != uint64(token) {
		return true, err
	}
	if err := s.client.ReleaseLease(ctx, l); err != nil && !errors.Is(err, ErrLeaseLost) {
		return true, err
	}
	s.logf("admin lock %s: released by %s, token %d", lockName, l.Holder, l.Token)
	return true, nil
}

// AdminLockStatus is a raftless master's GetAdminLockStatus (ok false for
// any other master): who holds the lock, as of the last accepted block.
func AdminLockStatus(ctx context.Context, seq any, lockName string) (holder string, locked, ok bool, err error) {
	if !Raftless(seq) {
		return "", false, false, nil
	}
	s := seq.(*SChain)
	l, held, err := s.client.LeaseOf(ctx, LockRange(s.cfg.Prefix, lockName))
	if err != nil || !held {
		return "", false, true, err
	}
	return l.Holder, true, true, nil
}

// VacuumHold is a master's hold on one volume's vacuum. For any master but
// a raftless one it holds nothing and always answers yes: raft's leader
// alone vacuums there.
type VacuumHold struct {
	s    *SChain
	vid  uint32
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex // guards lease, lost
	lease Lease
	lost  error
}

// HoldVacuum takes volume vid's vacuum lease for a raftless master and keeps
// renewing it until Release. ok is false when the master must not vacuum vid:
// another master holds it, or S-Chain did not grant it.
func HoldVacuum(seq any, vid uint32) (h *VacuumHold, ok bool) {
	if !Raftless(seq) {
		return &VacuumHold{}, true
	}
	s := seq.(*SChain)
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.RefillTimeout)
	defer cancel()
	l, err := s.client.AcquireLease(ctx, VacuumRange(s.cfg.Prefix, vid), rangeSegment(s.self), s.cfg.VacuumTTL)
	if err != nil {
		s.logf("vacuum of volume %d: not this master's: %v", vid, err)
		return nil, false
	}
	s.logf("vacuum of volume %d: lease granted, token %d, until %d ms", vid, l.Token, l.ExpiresMs)
	h = &VacuumHold{s: s, vid: vid, lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	go h.renew()
	return h, true
}

// renew keeps the lease every third of its TTL until Release or a refusal.
func (h *VacuumHold) renew() {
	defer close(h.done)
	t := time.NewTicker(h.s.cfg.VacuumTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		if err := h.confirm(); err != nil {
			return
		}
	}
}

// confirm renews the lease on S-Chain, which refuses its token once the
// lease expired or was taken over; it records and returns a refusal.
func (h *VacuumHold) confirm() error {
	h.mu.Lock()
	l, lost := h.lease, h.lost
	h.mu.Unlock()
	if lost != nil {
		return lost
	}
	ctx, cancel := context.WithTimeout(h.s.ctx, h.s.cfg.VacuumTTL/3)
	defer cancel()
	next, err := h.s.client.RenewLease(ctx, l, h.s.cfg.VacuumTTL)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case errors.Is(err, ErrLeaseLost):
		h.lost = err
		h.s.logf("vacuum of volume %d: lease token %d lost: %v", h.vid, l.Token, err)
	case err == nil:
		h.lease = next
	}
	return err
}

// Held confirms on S-Chain, renewing it, that the lease is still this
// master's: asked right before a step that must not run twice, the commit
// of a compaction. A master that paused past the TTL learns here that
// another may have vacuumed the volume since.
func (h *VacuumHold) Held() bool {
	if h.s == nil {
		return true
	}
	return h.confirm() == nil
}

// Release ends the hold and its lease.
func (h *VacuumHold) Release() {
	if h.s == nil {
		return
	}
	close(h.stop)
	<-h.done
	h.mu.Lock()
	l, lost := h.lease, h.lost
	h.mu.Unlock()
	if lost != nil {
		return
	}
	ctx, cancel := context.WithTimeout(h.s.ctx, h.s.cfg.RequestTimeout)
	defer cancel()
	if err := h.s.client.ReleaseLease(ctx, l); err != nil {
		h.s.logf("vacuum of volume %d: releasing lease token %d: %v (it expires by itself)", h.vid, l.Token, err)
		return
	}
	h.s.logf("vacuum of volume %d: lease token %d released", h.vid, l.Token)
}
