package pairs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/seaweedfs/schainseq"
)

func writePairs(t *testing.T, dir string, pairs ...schainseq.Pair) {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, schainseq.PairsFile))
	require.NoError(t, err)
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, p := range pairs {
		require.NoError(t, enc.Encode(p))
	}
}

func key(at time.Time, master string, term uint64, vid uint32, first, count, base uint64) schainseq.Pair {
	return schainseq.Pair{
		At: at, Master: master, Term: term, Kind: schainseq.KindKey, Range: schainseq.KeyRange("sw", vid, 1), Volume: vid,
		Legacy: &schainseq.LegacyAnswer{First: first, Count: count},
		SChain: &schainseq.Reservation{Range: schainseq.KeyRange("sw", vid, 1), Base: base, Count: count, TxID: "tx", Owner: "n"},
	}
}

// TestLoadMergesMastersAndFindsTheReissue: two masters' files merge by
// time; the second leader reissuing the first one's keys is a legacy
// reissue (a defect, not a disagreement); a volume id equal to a file key
// is not; drops are counted.
func TestLoadMergesMastersAndFindsTheReissue(t *testing.T) {
	require := require.New(t)
	t0 := time.Unix(1000, 0)
	a, b := t.TempDir(), t.TempDir()
	withSeq := func(p schainseq.Pair, seq uint64) schainseq.Pair { p.Seq, p.Issued = seq, p.At; return p }
	writePairs(t, a,
		withSeq(key(t0, "m1", 1, 3, 1, 2, 0), 1),
		withSeq(key(t0.Add(2*time.Second), "m1", 1, 4, 3, 1, 0), 2),
		schainseq.Pair{At: t0.Add(3 * time.Second), Master: "m1", Term: 1, Kind: schainseq.KindState,
			State: &schainseq.ShadowState{Offered: 5, Dropped: 2, Mirrored: 3, LegacyMaxKey: 9, MaxVolumeID: 4}},
	)
	writePairs(t, b,
		withSeq(key(t0.Add(3*time.Second), "m1", 1, 3, 5, 1, 2), 3), // m1's third, in another file
		withSeq(key(t0.Add(10*time.Second), "m2", 2, 3, 2, 2, 3), 1),
		schainseq.Pair{At: t0.Add(11 * time.Second), Master: "m2", Term: 2, Kind: schainseq.KindVolume, Range: schainseq.VolumeRange("sw"), Volume: 2,
			Legacy: &schainseq.LegacyAnswer{First: 2, Count: 1}, SChain: &schainseq.Reservation{Base: 1, Count: 1}},
	)
	s, err := Load(a, b, filepath.Join(t.TempDir(), "no-master-here"))
	require.NoError(err)
	require.Len(s.Pairs, 4+1)
	var m1 []uint64
	for i, p := range s.Pairs {
		if p.Master == "m1" {
			m1 = append(m1, p.Seq)
			require.Less(i, 3, "m1's pairs come before m2's, issued later")
		}
	}
	require.Equal([]uint64{1, 2, 3}, m1, "a process's pairs in its sequence order")
	require.Equal(uint64(2), s.Totals().Dropped)
	k, v := s.LegacyMax()
	require.Equal(uint64(9), k, "the state line's max covers the dropped mirrors")
	require.Equal(uint32(4), v)

	cfg := shadow.DefaultConfig()
	cfg.Gate.MinRequests, cfg.Gate.MinDuration = 1, 0
	c, err := s.Compare(ComparatorConfig(cfg, "sw"))
	require.NoError(err)
	rep := c.Report()
	require.Equal(uint64(5), rep.Requests)
	require.Equal(uint64(1), rep.Counts[shadow.KindLegacyReissue], "m2 reissued m1's keys 2..3: %v", rep.Examples)
	require.Zero(rep.Counts[shadow.KindLegacyDuplicate], "volume id 2 is not file key 2")
	require.Zero(rep.ByClass[shadow.ClassSChainViolation])
	require.True(rep.Decision.Ready, "%v", rep.Decision.Reasons)
}

func TestObservationOfAFailedMirror(t *testing.T) {
	p := key(time.Unix(5, 0), "m", 1, 1, 1, 1, 0)
	p.SChain, p.Error = nil, "S-Chain unreachable"
	o := Observation(0, p)
	require.EqualError(t, o.SChain.Err, "S-Chain unreachable")
	require.False(t, o.SChain.Missing)
	p.Error, p.Missing = "deadline", true
	o = Observation(0, p)
	require.True(t, o.SChain.Missing)
	require.NoError(t, o.SChain.Err)
}

func TestLoadWithoutPairs(t *testing.T) {
	_, err := Load(t.TempDir())
	require.ErrorContains(t, err, "no pairs")
}

// TestLoadOrdersByIssue: mirrors of different volumes answer with different
// delays, so S-Chain answer times interleave the global key order. Compared
// in answer order, the shared legacy key space fills gaps late, coarsens,
// and reports keys never issued twice as duplicates; compared in issue order
// (what Load does) it reports nothing.
func TestLoadOrdersByIssue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var ps []schainseq.Pair
	bases := map[uint32]uint64{}
	for k := uint64(1); k <= 400; k++ {
		vid := uint32(1 + k%4)
		issued := t0.Add(time.Duration(k) * time.Millisecond)
		p := key(issued.Add(time.Duration(vid)*100*time.Millisecond), "m1", 1, vid, k, 1, bases[vid])
		bases[vid]++
		p.Issued, p.Seq = issued, k
		ps = append(ps, p)
	}
	dir := t.TempDir()
	writePairs(t, dir, ps...)
	s, err := Load(dir)
	require.NoError(t, err)
	cfg := shadow.DefaultConfig()
	cfg.LateAfter, cfg.MaxIntervalsPerRange = 0, 16
	cfg.Gate.MinRequests, cfg.Gate.MinDuration = 1, 0
	c, err := s.Compare(ComparatorConfig(cfg, "sw"))
	require.NoError(t, err)
	rep := c.Report()
	require.Empty(t, rep.Counts, "%v", rep.Examples)

	// The same pairs in answer order: the false duplicates this avoids.
	slices.SortFunc(s.Pairs, func(a, b schainseq.Pair) int { return a.At.Compare(b.At) })
	c, err = s.Compare(ComparatorConfig(cfg, "sw"))
	require.NoError(t, err)
	require.Positive(t, c.Report().Counts[shadow.KindLegacyDuplicate])
}
