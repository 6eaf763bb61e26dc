package schainseq

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func newTestShadow(t *testing.T, cfg Config, stock Stock) *Shadow {
	s, err := newShadow(cfg, "127.0.0.1:9333", stock, testLog(t))
	require.NoError(t, err)
	return s
}

func readAll(t *testing.T, dir string) (pairs []Pair, states []ShadowState) {
	files, err := PairFiles(dir)
	require.NoError(t, err)
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		require.NoError(t, ReadPairs(fh, func(p Pair) error {
			if p.Kind == KindState {
				states = append(states, *p.State)
			} else {
				pairs = append(pairs, p)
			}
			return nil
		}))
		require.NoError(t, fh.Close())
	}
	return pairs, states
}

// TestShadowMirrorsEveryAllocation: the stock answers are returned
// unchanged and every one is recorded beside S-Chain's answer, in issue
// order per range.
func TestShadowMirrorsEveryAllocation(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	cfg := testConfig(chain, TypeShadow)
	cfg.PairsDir = t.TempDir()
	stock := newMemSeq()
	s := newTestShadow(t, cfg, stock)

	var want []uint64
	for i := range 300 {
		k, err := s.NextFileIdForVolume(uint32(1+i%4), 2)
		require.NoError(err)
		want = append(want, k)
	}
	vid, err := s.NextVolumeId(6)
	require.NoError(err)
	require.Equal(uint32(7), vid, "the stock volume id")
	require.Eventually(func() bool { st := s.State(); return st.Mirrored+st.Failed == 301 }, 10*time.Second, 10*time.Millisecond)
	s.Close()

	for i, k := range want {
		require.Equal(uint64(1+2*i), k, "stock keys are unchanged")
	}
	pairs, states := readAll(t, cfg.PairsDir)
	require.Len(pairs, 301)
	require.NotEmpty(states)
	last := states[len(states)-1]
	require.Equal(ShadowState{Offered: 301, Mirrored: 301, LegacyMaxKey: 600, MaxVolumeID: 7}, last)
	ends := map[string]uint64{}
	var keys int
	for _, p := range pairs {
		require.Equal("127.0.0.1:9333", p.Master)
		require.Equal(s.term, p.Term)
		require.NotNil(p.SChain, "mirror failed: %s", p.Error)
		require.Equal(p.Legacy.Count, p.SChain.Count)
		require.GreaterOrEqual(p.SChain.Base, ends[p.Range], "S-Chain ids of a range arrive in order")
		ends[p.Range] = p.SChain.End()
		switch p.Kind {
		case KindKey:
			keys++
			require.Equal(KeyRange(cfg.Prefix, p.Volume, 1), p.Range)
		case KindVolume:
			require.Equal(VolumeRange(cfg.Prefix), p.Range)
			require.Equal(uint64(7), p.Legacy.First)
		}
	}
	require.Equal(300, keys)
	require.NoError(chain.CheckUnique())
}

// TestShadowNeverWaitsForSChain: with an S-Chain that never answers, the
// stock keys keep coming, the queue fills, and the overflow is dropped and
// counted; mirrors that were sent end as missing.
func TestShadowNeverWaitsForSChain(t *testing.T) {
	require := require.New(t)
	hang := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer stuck.Close()
	defer close(hang)
	cfg := DefaultConfig("")
	cfg.Type, cfg.RPC, cfg.Chain, cfg.Token = TypeShadow, []string{stuck.URL}, "c", "t"
	cfg.ShadowQueue, cfg.ShadowWorkers, cfg.ShadowTimeout = 16, 2, 100*time.Millisecond
	cfg.PairsDir = t.TempDir()
	s := newTestShadow(t, cfg, newMemSeq())

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20_000 {
			if _, err := s.NextFileIdForVolume(uint32(i%8), 1); err != nil {
				t.Errorf("shadow failed an assign: %v", err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("assigns blocked on the mirror")
	}
	st := s.State()
	require.Equal(uint64(20_000), st.Offered)
	require.Positive(st.Dropped)
	require.Equal(uint64(20_000), st.LegacyMaxKey)
	s.Close()
	pairs, _ := readAll(t, cfg.PairsDir)
	for _, p := range pairs {
		require.True(p.Missing, "a mirror without an answer is missing: %+v", p)
		require.Nil(p.SChain)
	}
}

func TestPairsFileRotatesAndReadsBack(t *testing.T) {
	require := require.New(t)
	dir := t.TempDir()
	w, err := newPairWriter(dir, 1<<10, t.Logf)
	require.NoError(err)
	for i := range 40 {
		w.write(Pair{Kind: KindKey, Range: "r", Legacy: &LegacyAnswer{First: uint64(i), Count: 1}})
	}
	w.flush()
	_ = w.f.Close()
	files, err := PairFiles(dir)
	require.NoError(err)
	require.Len(files, 2, "one rotation kept")
	pairs, _ := readAll(t, dir)
	require.NotEmpty(pairs)
	require.Less(len(pairs), 40, "the oldest rotated file was replaced")
	require.Equal(uint64(39), pairs[len(pairs)-1].Legacy.First)
	for i := 1; i < len(pairs); i++ {
		require.Equal(pairs[i-1].Legacy.First+1, pairs[i].Legacy.First, "oldest first, none lost between the two files")
	}
}

func TestReadPairsIgnoresATruncatedLastLine(t *testing.T) {
	good := `{"kind":"key","range":"r","legacy":{"first":1,"count":1,"ns":0}}` + "\n"
	var n int
	require.NoError(t, ReadPairs(strings.NewReader(good+`{"kind":"ke`), func(Pair) error { n++; return nil }))
	require.Equal(t, 1, n)
	err := ReadPairs(strings.NewReader(`{"kind":`+"\n"+good), func(Pair) error { return nil })
	require.ErrorContains(t, err, "pairs line 1")
	_, err = PairFiles(filepath.Join(t.TempDir(), "none"))
	require.ErrorContains(t, err, "schain-shadow")
}

// TestShadowSequenceFollowsTheStockOrder: with concurrent assigns, pairs in
// Seq order have increasing stock keys, and each range's S-Chain answers in
// that order never go down (what the comparator's monotonicity check reads).
func TestShadowSequenceFollowsTheStockOrder(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 2)
	cfg := testConfig(chain, TypeShadow)
	cfg.PairsDir = t.TempDir()
	s := newTestShadow(t, cfg, newMemSeq())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				_, err := s.NextFileIdForVolume(uint32(1+(w+i)%3), 1)
				require.NoError(err)
			}
		}()
	}
	wg.Wait()
	require.Eventually(func() bool { st := s.State(); return st.Mirrored+st.Failed+st.Dropped == 800 }, 10*time.Second, 10*time.Millisecond)
	s.Close()
	pairs, _ := readAll(t, cfg.PairsDir)
	slices.SortFunc(pairs, func(a, b Pair) int { return cmp.Compare(a.Seq, b.Seq) })
	ends := map[string]uint64{}
	for i, p := range pairs {
		if i > 0 {
			require.Greater(p.Seq, pairs[i-1].Seq)
			require.Greater(p.Legacy.First, pairs[i-1].Legacy.First, "stock keys in Seq order")
		}
		require.NotNil(p.SChain)
		require.GreaterOrEqual(p.SChain.Base, ends[p.Range], "range %s answers in Seq order", p.Range)
		ends[p.Range] = p.SChain.End()
	}
}

// TestShadowBatchesARangeUnderLoad: while a mirror is in flight, the next
// mirrors of its range queue up and go as one allocation, split back in
// issue order: every allocation is mirrored (no drops with a small queue),
// with its own count, in consecutive S-Chain ids.
func TestShadowBatchesARangeUnderLoad(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 1)
	chain.SetDelay(20 * time.Millisecond)
	cfg := testConfig(chain, TypeShadow)
	cfg.PairsDir = t.TempDir()
	cfg.ShadowQueue, cfg.ShadowWorkers = 512, 1
	s := newTestShadow(t, cfg, newMemSeq())
	for i := range 500 {
		_, err := s.NextFileIdForVolume(4, uint64(1+i%3))
		require.NoError(err)
	}
	require.Eventually(func() bool { st := s.State(); return st.Mirrored+st.Failed+st.Dropped == 500 }, 20*time.Second, 10*time.Millisecond)
	s.Close()
	require.Zero(s.State().Dropped)
	pairs, _ := readAll(t, cfg.PairsDir)
	require.Len(pairs, 500)
	slices.SortFunc(pairs, func(a, b Pair) int { return cmp.Compare(a.Seq, b.Seq) })
	batched := 0
	for i, p := range pairs {
		require.Equal(p.Legacy.Count, p.SChain.Count)
		if i > 0 {
			require.GreaterOrEqual(p.SChain.Base, pairs[i-1].SChain.End())
			if p.SChain.TxID == pairs[i-1].SChain.TxID {
				require.Equal(pairs[i-1].SChain.End(), p.SChain.Base, "one batch: consecutive ids")
			}
		}
		if p.Batch > 1 {
			batched++
		}
	}
	require.Greater(batched, 400, "most mirrors went in batches")
	require.Less(chain.Calls("allocate"), 100)
}
