package schainseq

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Leaderless masters (type schain-leaderless). A stock master allocates
// only while it leads raft: followers hand heartbeats back and forward
// assigns, so a dead leader stops every assign for the election and the new
// leader's warm-up (about 16 s). In this type nothing of allocation needs a
// leader: file keys and volume ids come from S-Chain reservations, which are
// disjoint between masters (each master reserves its own), and the topology
// is soft state rebuilt from heartbeats. So the patched master, when
// Leaderless(its sequencer) holds:
//
//   - accepts heartbeats without leading (volume servers keep one stream per
//     master: HeartbeatEach), and keeps its own topology;
//   - serves /dir/assign, gRPC Assign, /dir/lookup, gRPC LookupVolume and
//     /dir/status itself;
//   - grows volumes itself with S-Chain volume ids, GrowShare of the stock
//     count, without raft;
//   - refuses assigns during its own warm-up (WarmingUp) only, not after
//     raft elections.
//
// Raft still runs between the masters for what needs one coordinator
// (vacuum, the periodic growth scan, admin shell locks, topology id); none
// of it is on the assign path.

// Leaderless reports whether seq is a leaderless master's sequencer (of
// type schain-leaderless or schain-raftless).
func Leaderless(seq any) bool {
	s, ok := seq.(*SChain)
	return ok && (s.cfg.Type == TypeLeaderless || s.cfg.Type == TypeRaftless)
}

// WarmingUp reports, for a leaderless master's sequencer (ok), whether the
// master is in its warm-up: started less than schain_warmup ago. The
// patched Topology.IsWarmingUp asks it first, so that a raft election does
// not put a master that already knows the topology into a warm-up.
func WarmingUp(seq any) (warming, ok bool) {
	if !Leaderless(seq) {
		return false, false
	}
	s := seq.(*SChain)
	return time.Since(s.started) < s.cfg.Warmup, true
}

// GrowShare is how many volumes one automatic growth of count creates: for
// a leaderless master its share, count/schain_masters rounded up (masters
// that find a layout full at once together grow about what one leader
// would; one that grows alone grows again when its share fills), else
// count.
func GrowShare(seq any, count uint32) uint32 {
	if !Leaderless(seq) || count == 0 {
		return count
	}
	n := uint32(seq.(*SChain).cfg.Masters)
	return (count + n - 1) / n
}

// LeaderlessEnv is the environment variable that puts a patched volume
// server in leaderless mode ("1" or "true"): it keeps a heartbeat stream
// to every master of its -master list instead of one to the leader. Any
// patched client of leaderless masters (filer, S3 gateway, shell) set with
// it retries a failed master call sooner (FirstRetry).
const LeaderlessEnv = "SCHAIN_LEADERLESS"

// LeaderlessClient reports whether LeaderlessEnv is set: this process is a
// volume server or a client (filer, S3 gateway, shell) of leaderless
// masters. Its master client then keeps no state per master across a
// change of master (the filers' lock ring is every master's, not a
// leader's, and the next master's update replaces it), and retries sooner
// (FirstRetry).
func LeaderlessClient() bool {
	v := strings.TrimSpace(os.Getenv(LeaderlessEnv))
	return v == "1" || strings.EqualFold(v, "true")
}

// leaderlessRetry is a client's first pause before it asks a master again
// (the next in its list, once its stream to the failed one ended).
const leaderlessRetry = 50 * time.Millisecond

// FirstRetry is the first pause of SeaweedFS's retries of a master call
// (assign, lookup, any call through the master client), the pause of a
// master client between two rounds over its master list, and the bound of
// its polls for a connection while it has none: stock waits a second (200
// ms for the polls), for a leader to be elected. A client of leaderless masters
// (LeaderlessEnv set: volume servers, filers, S3 gateways, shells) waits
// leaderlessRetry: any master answers, and its master client moves to the
// next one as soon as the failed one's stream ends.
func FirstRetry(stock time.Duration) time.Duration {
	if LeaderlessClient() {
		return min(stock, leaderlessRetry)
	}
	return stock
}

// redial is how long a volume server waits before dialing a master again
// after its stream ended: a restarted master hears from every volume server
// within about this long (schain_warmup covers it).
const redial = time.Second

// HeartbeatEach runs beat, one heartbeat stream to its end, for every master
// at once, dialing each again redial after its stream ended, until stop is
// closed; then it waits for the streams to end. A volume server of
// leaderless masters runs it instead of its leader-following loop. Every
// stream sends full volume lists (the per-stream delta bookkeeping of the
// store assumes one master), which is what a master rebuilds its topology
// from.
func HeartbeatEach[T any](masters []string, stop <-chan T, beat func(master string) error) {
	logf := newLogf()
	logf("leaderless: one heartbeat stream to each of %d masters: %s", len(masters), strings.Join(masters, ", "))
	var wg sync.WaitGroup
	for _, m := range masters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := beat(m)
				select {
				case <-stop:
					return
				default:
				}
				if err != nil {
					logf("leaderless: heartbeat to master %s: %v (dialing again every %v)", m, err, redial)
				}
				t := time.NewTimer(redial)
				select {
				case <-stop:
					t.Stop()
					return
				case <-t.C:
				}
			}
		}()
	}
	wg.Wait()
}

// After is the master after m in masters (the first after the last): where
// a volume server of leaderless masters sends its own lookups once m's
// stream ended.
func After(masters []string, m string) string {
	for i, x := range masters {
		if x == m {
			return masters[(i+1)%len(masters)]
		}
	}
	if len(masters) > 0 {
		return masters[0]
	}
	return m
}

func modeNote(cfg Config) string {
	var notes []string
	if cfg.Type == TypeRaftless {
		notes = append(notes, fmt.Sprintf("raftless: no raft; the admin lock and vacuums take S-Chain leases of %s/lock and %s/vacuum (TTL %v, %v)", cfg.Prefix, cfg.Prefix, cfg.LockTTL, cfg.VacuumTTL))
	}
	if cfg.Type == TypeLeaderless || cfg.Type == TypeRaftless {
		notes = append(notes, fmt.Sprintf("leaderless: this master allocates without leading, grows 1/%d of the stock count, warm-up %v", cfg.Masters, cfg.Warmup))
	}
	if cfg.Final {
		notes = append(notes, "only final (certified) reservations")
	}
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}

// EcShardPulse is how often a volume server sends a master its full list of
// erasure-coding shards: stock every 17 pulses, new and deleted shards going
// as deltas in between. The streams of a volume server of leaderless masters
// share the store's delta channels, so a delta reaches one master only; the
// others would not learn of shards ec.encode just made for up to 17 pulses
// (85 s), answering lookups of the volume with not found. So there the full
// list goes every pulse, as the full volume list already does.
func EcShardPulse(stock, pulse time.Duration) time.Duration {
	if LeaderlessClient() {
		return pulse
	}
	return stock
}
