package schainseq

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/reservation"
	"github.com/s-chain/schain/tests/framework/apitest"
)

func leaderlessConfig(chain *apitest.Net) Config {
	cfg := testConfig(chain, TypeLeaderless)
	cfg.Masters = 3
	return cfg
}

// TestLeaderlessMastersHoldDisjointReservations: three leaderless masters
// assign keys of the same volumes at once, each from its own reservations:
// no (volume, key) is handed out twice, every key lies in an allocation the
// chain answered, and volume ids grown by the masters at once are distinct.
func TestLeaderlessMastersHoldDisjointReservations(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	cutover(chain, "seaweedfs", 1000, 10)
	var masters []*SChain
	for range 3 {
		masters = append(masters, newTestSChain(t, chain, leaderlessConfig(chain)))
	}
	type key struct {
		vid uint32
		k   uint64
	}
	var (
		mu      sync.Mutex
		seen    = map[key]int{}
		volumes = map[uint32]int{}
		wg      sync.WaitGroup
	)
	errs := make(chan error, 12*301)
	for _, s := range masters {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := s.NextVolumeId(0)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				volumes[v]++
				mu.Unlock()
				for i := range 300 {
					vid := uint32(100 + (i+w)%3) // the same three volumes on every master
					k, err := s.NextFileIdForVolume(vid, 1)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					seen[key{vid, k}]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(err)
	}
	for k, n := range seen {
		require.Equal(1, n, "volume %d key %d handed out %d times", k.vid, k.k, n)
		require.GreaterOrEqual(k.k, uint64(1000), "below the cutover floor")
	}
	require.Len(seen, 3*4*300)
	for v, n := range volumes {
		require.Equal(1, n, "volume id %d grown twice", v)
		require.GreaterOrEqual(v, uint32(10))
	}
	require.Len(volumes, 12)
	require.NoError(chain.CheckUnique())
}

func TestLeaderlessHooks(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 1)
	cfg := leaderlessConfig(chain)
	cfg.Warmup = time.Hour
	l := newTestSChain(t, chain, cfg)
	plain := newTestSChain(t, chain, testConfig(chain, TypeSChain))

	require.True(Leaderless(l))
	require.False(Leaderless(plain), "type schain keeps the leader")
	require.False(Leaderless(nil))

	warming, ok := WarmingUp(l)
	require.True(ok)
	require.True(warming, "within its warm-up")
	_, ok = WarmingUp(plain)
	require.False(ok, "type schain warms up as stock, after elections")
	l.cfg.Warmup = 0
	warming, _ = WarmingUp(l)
	require.False(warming)

	for count, want := range map[uint32]uint32{7: 3, 6: 2, 1: 1, 0: 0} {
		require.Equal(want, GrowShare(l, count), "share of %d", count)
		require.Equal(count, GrowShare(plain, count), "a leader grows the stock count")
	}

	require.Equal("b", After([]string{"a", "b", "c"}, "a"))
	require.Equal("a", After([]string{"a", "b", "c"}, "c"))
	require.Equal("a", After([]string{"a", "b", "c"}, "z"))
}

func TestLeaderlessConfig(t *testing.T) {
	require := require.New(t)
	base := map[string]any{"schain_rpc": "http://127.0.0.1:1", "schain_chain": "c", "schain_token": "t"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	_, err := ParseConfig(with("type", TypeLeaderless), "")
	require.ErrorIs(err, errConfig)
	require.ErrorContains(err, "schain_masters")

	c, err := ParseConfig(with("type", TypeLeaderless, "schain_masters", 3, "schain_warmup", "5s", "schain_final", "true"), "")
	require.NoError(err)
	require.Equal(3, c.Masters)
	require.Equal(5*time.Second, c.Warmup)
	require.True(c.Final)

	c, err = ParseConfig(with("type", TypeLeaderless, "schain_masters", "2"), "")
	require.NoError(err)
	require.Equal(3*time.Second, c.Warmup, "the default warm-up")
	require.False(c.Final, "finality is off by default")

	for name, table := range map[string]map[string]any{
		"masters on schain":     with("type", TypeSChain, "schain_masters", 3),
		"final on the shadow":   with("type", TypeShadow, "schain_final", true),
		"final on raft":         {"type": "raft", "schain_final": true},
		"final not a boolean":   with("type", TypeSChain, "schain_final", "maybe"),
		"floors on leaderless":  with("type", TypeLeaderless, "schain_masters", 3, "file_key_floor", 5),
		"negative masters text": with("type", TypeLeaderless, "schain_masters", "-1"),
	} {
		_, err := ParseConfig(table, "")
		require.ErrorIs(err, errConfig, name)
	}
}

// TestHeartbeatEachKeepsAStreamPerMaster: every master gets its own
// stream, a master whose stream fails is dialed again (and the others are
// not disturbed), and closing stop ends them all.
func TestHeartbeatEachKeepsAStreamPerMaster(t *testing.T) {
	masters := []string{"m1", "m2", "m3"}
	stop := make(chan bool)
	var calls [3]atomic.Int32
	ended := make(chan struct{})
	running := make(chan string, 16)
	go func() {
		defer close(ended)
		HeartbeatEach(masters, stop, func(m string) error {
			i := int(m[1] - '1')
			calls[i].Add(1)
			if m == "m2" {
				return errors.New("connection refused") // a dead master
			}
			running <- m
			<-stop // a healthy stream lasts until the server stops
			return nil
		})
	}()
	got := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for len(got) < 2 || calls[1].Load() < 2 {
		select {
		case m := <-running:
			got[m] = true
		case <-deadline:
			t.Fatalf("streams %v, dials of the dead master %d", got, calls[1].Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(stop)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("HeartbeatEach did not end after stop")
	}
	require.Equal(t, int32(1), calls[0].Load(), "a healthy stream is not redialed")
	require.Equal(t, int32(1), calls[2].Load())
}

func TestLeaderlessClientEnv(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "TRUE": true, "0": false, "": false, "no": false} {
		t.Setenv(LeaderlessEnv, v)
		require.Equal(t, want, LeaderlessClient(), "%s=%q", LeaderlessEnv, v)
	}
	require.NoError(t, os.Unsetenv(LeaderlessEnv))
}

func TestEcShardPulse(t *testing.T) {
	t.Setenv(LeaderlessEnv, "")
	require.Equal(t, 85*time.Second, EcShardPulse(85*time.Second, 5*time.Second), "stock: every 17 pulses")
	t.Setenv(LeaderlessEnv, "1")
	require.Equal(t, 5*time.Second, EcShardPulse(85*time.Second, 5*time.Second), "leaderless: every pulse")
}

// TestFinalUsesOnlyFinalReservations: with schain_final, a reservation
// accepted but not final is not handed out (the assign fails with
// no key while finality is stalled, where type schain without it serves
// at once); once finality resumes, keys come from the final reservation.
func TestFinalUsesOnlyFinalReservations(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	cutover(chain, "seaweedfs", 1, 1)
	chain.SetFinalityStalled(true)

	accepted := newTestSChain(t, chain, testConfig(chain, TypeSChain))
	_, err := accepted.NextFileIdForVolume(7, 1)
	require.NoError(err, "without schain_final an accepted reservation serves")

	cfg := testConfig(chain, TypeSChain)
	cfg.Final, cfg.Wait, cfg.RefillTimeout = true, 200*time.Millisecond, 20*time.Second
	final := newTestSChain(t, chain, cfg)
	_, err = final.NextFileIdForVolume(8, 1)
	require.ErrorIs(err, reservation.ErrEmpty, "accepted is not final")
	waitUntil(t, "the reservation to be accepted on chain", func() bool { return chain.Counter(KeyRange("seaweedfs", 8, 1)) > 0 })

	chain.SetFinalityStalled(false)
	var k uint64
	waitUntil(t, "a key once finality resumes", func() bool {
		k, err = final.NextFileIdForVolume(8, 1)
		return err == nil
	})
	var inside bool
	for _, a := range chain.Issued() {
		if a.Range == KeyRange("seaweedfs", 8, 1) && k >= a.Base && k < a.Base+a.Count {
			inside = true
		}
	}
	require.True(inside, "key %d lies in no allocation", k)
}

// TestReserveFinalPollsATimedOutWait: the node's wait ends before the
// certificate (CodeTimeout naming the transaction); the client polls the
// receipt until final instead of sending the allocation again.
func TestReserveFinalPollsATimedOutWait(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	chain.SetMaxWait(50 * time.Millisecond)
	chain.SetFinalAfter(300 * time.Millisecond)
	cl := newTestClient(t, chain, apitest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cl.Reserve(ctx, "r", 10, 100, true)
	require.NoError(err)
	require.Equal(uint64(10), res.Count)
	require.GreaterOrEqual(res.Base, uint64(100))
	require.Equal(1, chain.Calls("allocate"), "a timed-out wait is polled, not sent again")
	require.Positive(chain.Calls("getReceipt"))

	chain.SetFinalityStalled(true)
	short, cancelShort := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelShort()
	_, err = cl.Reserve(short, "r", 10, 0, true)
	require.ErrorIs(err, context.DeadlineExceeded, "never final within the caller's deadline")
}

// waitUntil polls cond every 10 ms for at most 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFirstRetry(t *testing.T) {
	t.Setenv(LeaderlessEnv, "")
	require.Equal(t, time.Second, FirstRetry(time.Second), "stock waits for an election")
	t.Setenv(LeaderlessEnv, "1")
	require.Equal(t, 50*time.Millisecond, FirstRetry(time.Second), "a client of leaderless masters asks the next one at once")
	require.Equal(t, 10*time.Millisecond, FirstRetry(10*time.Millisecond))
}

// TestPrimeReservesBeforeTheFirstAssign: a master primes the volumes
// heartbeats report, so its first assign of one (after a client turned to
// it) is answered from a reservation already committed.
func TestPrimeReservesBeforeTheFirstAssign(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	cutover(chain, "seaweedfs", 1000, 10)
	s := newTestSChain(t, chain, leaderlessConfig(chain))
	Prime(s, 42)
	Prime(s, 42) // one reservation, however many heartbeats report it
	require.Eventually(func() bool {
		return s.keyPool(42).Holds(1)
	}, 10*time.Second, 5*time.Millisecond)
	allocs := chain.Calls("allocate")
	chain.SetBlockTime(5 * time.Second) // a refill now would wait a long block
	start := time.Now()
	_, err := s.NextFileIdForVolume(42, 1)
	require.NoError(err)
	require.Less(time.Since(start), time.Second, "answered from the primed reservation")
	require.Equal(allocs, chain.Calls("allocate"), "no reservation on the assign path")
	Prime(&memSeq{}, 42) // any other sequencer: nothing to do
}
