package schainseq

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/reservation"
	"github.com/s-chain/schain/tests/framework/apitest"
)

func testConfig(chain *apitest.Net, typ string) Config {
	cfg := DefaultConfig("")
	cfg.Type = typ
	cfg.RPC, cfg.Chain, cfg.Token = chain.URIs(), chain.ChainID.String(), apitest.Token
	cfg.ReservationMin = 64
	cfg.Wait = 2 * time.Second
	cfg.RefillTimeout = 5 * time.Second
	cfg.RequestTimeout = time.Second
	return cfg
}

func newTestSChain(t *testing.T, chain *apitest.Net, cfg Config) *SChain {
	s, err := newSChain(cfg, "127.0.0.1:9333.19333", testLog(t))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// cutover records floors the way `schain seaweedfs cutover` does.
func cutover(chain *apitest.Net, prefix string, keyFloor, volumeFloor uint64) {
	chain.SetCounter(KeyFloorRange(prefix), keyFloor)
	chain.SetCounter(VolumeFloorRange(prefix), volumeFloor)
}

// TestSChainHandsOutOnlyCommittedKeysOnce: concurrent assigns over several
// volumes get distinct keys, each inside a reservation the chain answered,
// at or above the cutover floor.
func TestSChainHandsOutOnlyCommittedKeysOnce(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	cutover(chain, "seaweedfs", 1_000_000, 50)
	s := newTestSChain(t, chain, testConfig(chain, TypeSChain))

	type key struct {
		vid uint32
		k   uint64
	}
	var (
		mu   sync.Mutex
		seen = map[key]bool{}
		wg   sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				vid := uint32(1 + (w+i)%5)
				count := uint64(1 + i%3)
				k, err := s.NextFileIdForVolume(vid, count)
				if !assertNoErr(t, err) {
					return
				}
				mu.Lock()
				for j := range count {
					kk := key{vid, k + j}
					if seen[kk] {
						t.Errorf("key %d of volume %d handed out twice", kk.k, vid)
					}
					seen[kk] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.NoError(chain.CheckUnique())
	// Every key lies in a reservation of its volume's range.
	issued := chain.Issued()
	for kk := range seen {
		require.GreaterOrEqual(kk.k, uint64(1_000_000), "below the cutover floor")
		rng := KeyRange("seaweedfs", kk.vid, 1)
		inside := false
		for _, a := range issued {
			if a.Range == rng && kk.k >= a.Base && kk.k < a.Base+a.Count {
				inside = true
				break
			}
		}
		require.True(inside, "key %d of volume %d was not committed", kk.k, kk.vid)
	}
}

func assertNoErr(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

// TestSChainRefillsAheadOfNeed: a pool starts its next reservation when
// half of it is used, so a steady flow finds keys waiting.
func TestSChainRefillsAheadOfNeed(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 1)
	cutover(chain, "seaweedfs", 1, 1)
	chain.SetBlockTime(20 * time.Millisecond)
	s := newTestSChain(t, chain, testConfig(chain, TypeSChain)) // ReservationMin 64
	p := s.keyPool(3)
	refills := func() uint64 { return p.Stats().Refills }
	_, err := s.NextFileIdForVolume(3, 1)
	require.NoError(err)
	require.Equal(uint64(1), refills())
	for range 40 { // 23 left of 64: below half, a refill starts
		_, err := s.NextFileIdForVolume(3, 1)
		require.NoError(err)
	}
	require.Eventually(func() bool { return refills() == 2 }, 5*time.Second, 5*time.Millisecond, "no refill ahead of need")
	for range 60 { // the 23 left and the new reservation: no wait
		_, err := s.NextFileIdForVolume(3, 1)
		require.NoError(err)
	}
	st := p.Stats()
	require.Equal(uint64(101), st.Taken)
	require.Equal(uint64(1), st.Waits, "only the very first assign waited for a reservation")
	require.NoError(chain.CheckUnique())
}

// TestSChainWithoutCutoverRefuses: no floor on chain, no keys: the error
// names the cutover.
func TestSChainWithoutCutoverRefuses(t *testing.T) {
	chain := newChain(t, 1)
	s := newTestSChain(t, chain, testConfig(chain, TypeSChain))
	_, err := s.NextFileIdForVolume(1, 1)
	require.ErrorIs(t, err, reservation.ErrRefill)
	require.ErrorIs(t, err, ErrNoCutover)
	require.Contains(t, err.Error(), "schain seaweedfs cutover")
	_, err = s.NextVolumeId(3)
	require.ErrorIs(t, err, ErrNoCutover)
	require.Empty(t, chain.Issued())
}

// TestSChainUnreachableFailsWithinTheBound: with every node down an assign
// fails after at most Config.Wait, with a named error, and never returns a
// key; once a refill failed, the next assigns fail at once.
func TestSChainUnreachableFailsWithinTheBound(t *testing.T) {
	chain := newChain(t, 2)
	cutover(chain, "seaweedfs", 1, 1)
	cfg := testConfig(chain, TypeSChain)
	cfg.Wait = 300 * time.Millisecond
	cfg.RefillTimeout = 200 * time.Millisecond
	s := newTestSChain(t, chain, cfg)
	chain.Nodes[0].SetDown(true)
	chain.Nodes[1].SetDown(true)

	start := time.Now()
	_, err := s.NextFileIdForVolume(1, 1)
	require.True(t, noKeys(err), "%v", err)
	require.Less(t, time.Since(start), 5*time.Second)
	// Once the refill failed (on a loaded machine it can outlast the
	// first call's wait), a call within RetryAfter fails with the
	// reservation's reason.
	require.Eventually(t, func() bool {
		_, err = s.NextFileIdForVolume(1, 1)
		return errors.Is(err, reservation.ErrRefill)
	}, 5*time.Second, 20*time.Millisecond, "the failed refill is reported: %v", err)
	require.ErrorIs(t, err, client.ErrTransport, "the reason is named: %v", err)

	// Back up: assigns work again.
	chain.Nodes[0].SetDown(false)
	chain.Nodes[1].SetDown(false)
	require.Eventually(t, func() bool {
		_, err := s.NextFileIdForVolume(1, 1)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
}

// TestSChainKeepsServingFromReservationsWhileTheOwnerIsDown: keys already
// committed are handed out while S-Chain is unreachable; only a dry pool
// fails.
func TestSChainKeepsServingFromReservationsWhileTheOwnerIsDown(t *testing.T) {
	chain := newChain(t, 1)
	cutover(chain, "seaweedfs", 1, 1)
	cfg := testConfig(chain, TypeSChain)
	cfg.ReservationMin = 1000
	cfg.Wait, cfg.RefillTimeout = 100*time.Millisecond, 100*time.Millisecond
	s := newTestSChain(t, chain, cfg)
	_, err := s.NextFileIdForVolume(9, 1)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.keyPool(9).Stats().Left >= 999 }, 5*time.Second, 10*time.Millisecond)
	chain.Nodes[0].SetDown(true)
	for range 400 {
		_, err := s.NextFileIdForVolume(9, 1)
		require.NoError(t, err, "committed keys are served without S-Chain")
	}
}

// TestSChainVolumeIDs: volume ids are committed, above the cluster's max
// and the cutover floor, and a new volume's keys are reserved at once.
func TestSChainVolumeIDs(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 2)
	cutover(chain, "seaweedfs", 1, 100)
	s := newTestSChain(t, chain, testConfig(chain, TypeSChain))
	a, err := s.NextVolumeId(7)
	require.NoError(err)
	require.Equal(uint32(100), a, "the floor wins over max+1")
	b, err := s.NextVolumeId(a)
	require.NoError(err)
	require.Greater(b, a)
	// A cluster whose max is above the reservation (a missing cutover of
	// volume ids): ids at or below it are skipped, never handed out.
	c, err := s.NextVolumeId(500)
	require.NoError(err)
	require.Greater(c, uint32(500))
	require.NoError(chain.CheckUnique())
	require.Eventually(func() bool {
		left := s.keyPool(c).Stats().Left
		return left > 0
	}, 5*time.Second, 10*time.Millisecond, "the new volume's keys were reserved before its first assign")
}

func TestSChainNextFileIdWithoutVolumePanics(t *testing.T) {
	chain := newChain(t, 1)
	s := newTestSChain(t, chain, testConfig(chain, TypeSChain))
	require.PanicsWithValue(t, "schainseq: NextFileId without a volume: this SeaweedFS calls the sequencer outside the patched PickForWrite; rebuild with scripts/build-weed.sh", func() { s.NextFileId(1) })
}

// memSeq is the stock MemorySequencer's behaviour.
type memSeq struct {
	mu      sync.Mutex
	counter uint64
}

func newMemSeq() *memSeq { return &memSeq{counter: 1} }

func (m *memSeq) NextFileId(count uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.counter
	m.counter += count
	return r
}

func (m *memSeq) SetMax(seen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counter <= seen {
		m.counter = seen + 1
	}
}

func TestNewWithoutSChainIsStock(t *testing.T) {
	require := require.New(t)
	stock := newMemSeq()
	for _, typ := range []string{"raft", ""} {
		seq, err := New(typ, "m:9333", t.TempDir(), map[string]any{"type": typ}, stock)
		require.NoError(err)
		require.Same(stock, seq, "no S-Chain type and no floors: the stock sequencer itself")
		k, err := NextFileId(seq, 3, 5)
		require.NoError(err)
		require.Equal(stock.counter-5, k)
		v, err := NextVolumeId(seq, 41)
		require.NoError(err)
		require.Equal(uint32(42), v)
	}
}

func TestNewRollbackFloors(t *testing.T) {
	require := require.New(t)
	stock := newMemSeq()
	seq, err := New("raft", "m:9333", t.TempDir(), map[string]any{"file_key_floor": 5000, "volume_id_floor": "300"}, stock)
	require.NoError(err)
	k, err := NextFileId(seq, 1, 1)
	require.NoError(err)
	require.Equal(uint64(5000), k, "the first stock key is the floor")
	v, err := NextVolumeId(seq, 12)
	require.NoError(err)
	require.Equal(uint32(300), v)
	v, err = NextVolumeId(seq, 400)
	require.NoError(err)
	require.Equal(uint32(401), v, "above the floor the stock rule holds")
}

func TestNewRefusesBadTables(t *testing.T) {
	for name, tc := range map[string]struct {
		typ   string
		table map[string]any
		want  string
	}{
		"typo":                 {"raft", map[string]any{"file_key_flor": 1}, "unknown key(s) file_key_flor"},
		"schain without rpc":   {"schain", map[string]any{}, "needs schain_rpc"},
		"schain without token": {"schain", map[string]any{"schain_rpc": "http://x", "schain_chain": "c"}, "write token"},
		"schain with floors":   {"schain", map[string]any{"schain_rpc": "http://x", "schain_chain": "c", "schain_token": "t", "file_key_floor": 3}, "type raft"},
		"snowflake floors":     {"snowflake", map[string]any{"volume_id_floor": 3}, "need type raft"},
		"bad number":           {"raft", map[string]any{"file_key_floor": "-1"}, "unsigned integer"},
		"bad duration":         {"schain", map[string]any{"schain_wait": "soon"}, "duration"},
		"missing token file":   {"schain", map[string]any{"schain_rpc": "http://x", "schain_chain": "c", "schain_token_file": "/nonexistent/token"}, "schain_token_file"},
	} {
		_, err := New(tc.typ, "m", t.TempDir(), tc.table, newMemSeq())
		require.ErrorContains(t, err, tc.want, name)
		require.True(t, errors.Is(err, errConfig), name)
	}
}

func TestParseConfigValues(t *testing.T) {
	require := require.New(t)
	tokenFile := t.TempDir() + "/token"
	require.NoError(writeFile(tokenFile, " secret\n"))
	cfg, err := ParseConfig(map[string]any{
		"type": "schain", "schain_rpc": "http://a:1, http://b:2 ,", "schain_chain": "C", "schain_token_file": tokenFile,
		"schain_prefix": "prod", "schain_volume_band": 8, "schain_horizon": 45, "schain_wait": "1500ms",
		"schain_pairs_max_mb": 2,
	}, "/mdir")
	require.NoError(err)
	require.Equal([]string{"http://a:1", "http://b:2"}, cfg.RPC)
	require.Equal("secret", cfg.Token)
	require.Equal("prod", cfg.Prefix)
	require.Equal(uint32(8), cfg.VolumeBand)
	require.Equal(45*time.Second, cfg.Horizon)
	require.Equal(1500*time.Millisecond, cfg.Wait)
	require.Equal(int64(2<<20), cfg.PairsMaxBytes)
	require.Equal("/mdir/schain-shadow", cfg.PairsDir)
	require.Equal("prod/keys/2", KeyRange(cfg.Prefix, 17, cfg.VolumeBand))
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

// testLog logs through t until the test ends, and drops lines of
// background goroutines that outlive it.
func testLog(t *testing.T) func(string, ...any) {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf(format, args...)
		}
	}
}

// BenchmarkNextFileId is the sequencer's own cost per assign (keys from a
// warm reservation; refills run in the background), beside the stock
// memory sequencer's, with as many goroutines as GOMAXPROCS over 8 volumes.
func BenchmarkNextFileId(b *testing.B) {
	b.Run("stock", func(b *testing.B) {
		seq := newMemSeq()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = NextFileId(seq, 1, 1)
			}
		})
	})
	b.Run("schain", func(b *testing.B) {
		chain := newChain(b, 3)
		cutover(chain, "seaweedfs", 1, 1)
		cfg := testConfig(chain, TypeSChain)
		cfg.ReservationMin = MaxReservation / 4
		s, err := newSChain(cfg, "127.0.0.1:9333.19333", func(string, ...any) {})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for v := range uint32(8) {
			if _, err := s.NextFileIdForVolume(v, 1); err != nil {
				b.Fatal(err)
			}
		}
		var n atomic.Uint32
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			vid := n.Add(1) % 8
			for pb.Next() {
				if _, err := NextFileId(s, vid, 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// noKeys: the assign found no committed key, none came in time or the
// reservation failed.
func noKeys(err error) bool {
	return errors.Is(err, reservation.ErrEmpty) || errors.Is(err, reservation.ErrRefill)
}
