package shadow

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var (
	t0         = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	errTimeout = errors.New("unavailable")
)

// stream builds synthetic observations with logical time: one second per
// observation.
type stream struct {
	seq uint64
}

func (s *stream) next(rangeKey string, count uint64) Observation {
	s.seq++
	return Observation{
		Request: Request{Seq: s.seq, Range: rangeKey, Count: count},
		At:      t0.Add(time.Duration(s.seq) * time.Second),
		Legacy:  LegacySide{Latency: time.Millisecond},
		SChain:  SChainSide{Latency: 2 * time.Millisecond},
	}
}

// ok is a clean exchange: legacy [first, first+count) in term, S-Chain
// [base, base+count).
func (s *stream) ok(rangeKey string, count, first, term, base uint64) Observation {
	o := s.next(rangeKey, count)
	o.Legacy.Result = legacy.Result{First: first, Count: count, Leader: "n0", Term: term}
	o.SChain.Result = SChainResult{Base: base, Count: count, TxID: "tx", PChainHeight: 1, Owner: "v1"}
	return o
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.LateAfter = 100 * time.Millisecond
	cfg.Gate = GateConfig{MinRequests: 3, MinDuration: 2 * time.Second, BlockOnViolation: true}
	return cfg
}

func newTestComparator(t *testing.T, cfg Config) *Comparator {
	c, err := NewComparator(cfg)
	require.NoError(t, err)
	return c
}

func kinds(fs []Finding) []Kind {
	var out []Kind
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

func TestComparatorDetectsEachDivergence(t *testing.T) {
	tests := []struct {
		name string
		// prefix is fed first and must be clean; last is checked.
		prefix func(s *stream) []Observation
		last   func(s *stream) Observation
		want   []Kind
		side   Side
	}{
		{
			name: "clean",
			last: func(s *stream) Observation { return s.ok("r", 10, 1, 1, 1) },
		},
		{
			name: "count mismatch",
			last: func(s *stream) Observation {
				o := s.ok("r", 10, 1, 1, 1)
				o.SChain.Result.Count = 9
				return o
			},
			want: []Kind{KindCountMismatch}, side: SideBoth,
		},
		{
			name: "outcome mismatch",
			last: func(s *stream) Observation {
				o := s.ok("r", 10, 1, 1, 1)
				o.Legacy.Err = errTimeout
				return o
			},
			want: []Kind{KindOutcomeMismatch}, side: SideBoth,
		},
		{
			name: "both failed agree",
			last: func(s *stream) Observation {
				o := s.next("r", 10)
				o.Legacy.Err, o.SChain.Err = errTimeout, errTimeout
				return o
			},
		},
		{
			name:   "schain overlap",
			prefix: func(s *stream) []Observation { return []Observation{s.ok("r", 10, 1, 1, 1)} },
			last:   func(s *stream) Observation { return s.ok("r", 10, 11, 1, 5) },
			want:   []Kind{KindSChainOverlap}, side: SideSChain,
		},
		{
			name: "schain non-monotonic",
			prefix: func(s *stream) []Observation {
				return []Observation{s.ok("r", 10, 1, 1, 100)}
			},
			last: func(s *stream) Observation { return s.ok("r", 10, 11, 1, 50) },
			want: []Kind{KindSChainNonMonotonic}, side: SideSChain,
		},
		{
			name:   "legacy duplicate within a term",
			prefix: func(s *stream) []Observation { return []Observation{s.ok("r", 10, 1, 3, 1)} },
			last:   func(s *stream) Observation { return s.ok("r", 10, 5, 3, 11) },
			want:   []Kind{KindLegacyDuplicate}, side: SideLegacy,
		},
		{
			name:   "legacy reissue across terms is a defect",
			prefix: func(s *stream) []Observation { return []Observation{s.ok("r", 10, 1, 3, 1)} },
			last:   func(s *stream) Observation { return s.ok("r", 10, 1, 4, 11) },
			want:   []Kind{KindLegacyReissue}, side: SideLegacy,
		},
		{
			name: "missing legacy",
			last: func(s *stream) Observation {
				o := s.ok("r", 10, 1, 1, 1)
				o.Legacy = LegacySide{Missing: true}
				return o
			},
			want: []Kind{KindMissing}, side: SideLegacy,
		},
		{
			name: "missing schain",
			last: func(s *stream) Observation {
				o := s.ok("r", 10, 1, 1, 1)
				o.SChain = SChainSide{Missing: true}
				return o
			},
			want: []Kind{KindMissing}, side: SideSChain,
		},
		{
			name: "late schain",
			last: func(s *stream) Observation {
				o := s.ok("r", 10, 1, 1, 1)
				o.SChain.Latency = time.Second
				return o
			},
			want: []Kind{KindLate}, side: SideSChain,
		},
		{
			name: "other range is independent",
			prefix: func(s *stream) []Observation {
				return []Observation{s.ok("a", 10, 1, 1, 1)}
			},
			last: func(s *stream) Observation { return s.ok("b", 10, 1, 2, 1) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require := require.New(t)
			c := newTestComparator(t, testConfig())
			s := &stream{}
			if tt.prefix != nil {
				for _, o := range tt.prefix(s) {
					require.Empty(c.Observe(o))
				}
			}
			got := c.Observe(tt.last(s))
			require.Equal(tt.want, kinds(got))
			for _, f := range got {
				require.Equal(tt.side, f.Side)
				require.Equal(f.Kind.Class(), f.Class)
				require.NotEmpty(f.Detail)
			}
			rep := c.Report()
			for _, k := range tt.want {
				require.Equal(uint64(1), rep.Counts[k])
				require.Len(rep.Examples[k], 1)
			}
			resets := uint64(0)
			for _, k := range tt.want {
				if k.Class().ResetsGate() {
					resets = 1
				}
			}
			require.Equal(resets, rep.Decision.Resets)
		})
	}
}

func TestLegacyReissueDoesNotResetGate(t *testing.T) {
	require := require.New(t)
	c := newTestComparator(t, testConfig())
	s := &stream{}
	c.Observe(s.ok("r", 10, 1, 1, 1))
	c.Observe(s.ok("r", 10, 11, 1, 11))
	fs := c.Observe(s.ok("r", 10, 1, 2, 21)) // new leader restarted at 1
	require.Equal([]Kind{KindLegacyReissue}, kinds(fs))
	require.Equal(ClassLegacyDefect, fs[0].Class)
	rep := c.Report()
	require.True(rep.Decision.Ready, "reasons: %v", rep.Decision.Reasons)
	require.Equal(uint64(3), rep.Decision.WindowRequests)
	require.Equal(uint64(21), c.Floors(0).Global)
}

func TestGateResetsAndReopens(t *testing.T) {
	require := require.New(t)
	c := newTestComparator(t, testConfig())
	s := &stream{}
	base := uint64(1)
	clean := func() {
		require.Empty(c.Observe(s.ok("r", 1, base, 1, base)))
		base++
	}
	for range 3 {
		clean()
	}
	require.True(c.Ready())

	o := s.ok("r", 1, base, 1, base)
	o.Legacy.Err = errTimeout
	require.Equal([]Kind{KindOutcomeMismatch}, kinds(c.Observe(o)))
	base++
	d := c.Report().Decision
	require.False(d.Ready)
	require.Equal(uint64(1), d.Resets)
	require.Equal(KindOutcomeMismatch, d.LastReset.Kind)
	require.Zero(d.WindowRequests)
	require.Len(d.Reasons, 2)

	clean()
	clean()
	require.False(c.Ready(), "two requests spanning 1s are not enough")
	clean()
	d = c.Report().Decision
	require.True(d.Ready, "reasons: %v", d.Reasons)
	require.Equal(uint64(3), d.WindowRequests)
	require.Equal(2*time.Second, d.WindowDurationNS)
	require.Equal(t0.Add(5*time.Second), d.WindowStart, "the window opens at the first clean observation after the reset")
}

func TestGateDurationMatters(t *testing.T) {
	cfg := testConfig()
	cfg.Gate.MinDuration = time.Hour
	c := newTestComparator(t, cfg)
	s := &stream{}
	for i := range uint64(10) {
		c.Observe(s.ok("r", 1, i+1, 1, i+1))
	}
	d := c.Report().Decision
	require.False(t, d.Ready)
	require.Contains(t, d.Reasons[0], "clean window spans")
}

func TestSChainViolationBlocksForGood(t *testing.T) {
	for _, block := range []bool{true, false} {
		t.Run(map[bool]string{true: "blocking", false: "resetting"}[block], func(t *testing.T) {
			cfg := testConfig()
			cfg.Gate.BlockOnViolation = block
			c := newTestComparator(t, cfg)
			s := &stream{}
			c.Observe(s.ok("r", 10, 1, 1, 1))
			require.Equal(t, []Kind{KindSChainOverlap}, kinds(c.Observe(s.ok("r", 10, 11, 1, 1))))
			for i := range uint64(5) {
				c.Observe(s.ok("r", 1, 21+i, 1, 21+i))
			}
			require.Equal(t, !block, c.Ready())
		})
	}
}

func TestReportIsJSON(t *testing.T) {
	c := newTestComparator(t, testConfig())
	s := &stream{}
	c.Observe(s.ok("r", 10, 1, 1, 1))
	o := s.ok("r", 10, 11, 1, 11)
	o.SChain = SChainSide{Missing: true}
	c.Observe(o)
	b, err := json.Marshal(c.Report())
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	require.Contains(t, string(b), `"missing":1`)
	require.Contains(t, string(b), `"ready":false`)
}

func TestExamplesAreCapped(t *testing.T) {
	cfg := testConfig()
	cfg.MaxExamples = 2
	c := newTestComparator(t, cfg)
	s := &stream{}
	for range 10 {
		o := s.next("r", 1)
		o.Legacy.Missing = true
		c.Observe(o)
	}
	rep := c.Report()
	require.Equal(t, uint64(10), rep.Counts[KindMissing])
	require.Len(t, rep.Examples[KindMissing], 2)
}

func TestRangesAreCapped(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRanges = 2
	c := newTestComparator(t, cfg)
	s := &stream{}
	c.Observe(s.ok("a", 1, 1, 1, 1))
	c.Observe(s.ok("b", 1, 1, 1, 1))
	require.Equal(t, []Kind{KindTrackingTruncated}, kinds(c.Observe(s.ok("c", 1, 7, 1, 1))))
	require.Empty(t, c.Observe(s.ok("d", 1, 1, 1, 1)))
	rep := c.Report()
	require.Equal(t, 2, rep.Tracking.Ranges)
	require.Equal(t, uint64(2), rep.Tracking.UntrackedObs)
	require.Equal(t, uint64(8), c.Floors(0).For("c"), "untracked ranges get the global floor")
	require.True(t, rep.Decision.Ready || len(rep.Decision.Reasons) > 0)
}

func TestFragmentedLegacyTrackingStaysBounded(t *testing.T) {
	require := require.New(t)
	cfg := testConfig()
	cfg.MaxIntervalsPerRange = 16
	c := newTestComparator(t, cfg)
	s := &stream{}
	var truncated int
	// A global sequencer interleaves ranges, so each range sees gaps.
	for i := range uint64(1000) {
		fs := c.Observe(s.ok("r", 1, 1+2*i, 1, 1+i))
		for _, f := range fs {
			require.Equal(KindTrackingTruncated, f.Kind)
			truncated++
		}
	}
	require.Equal(1, truncated, "reported once per range")
	rep := c.Report()
	require.LessOrEqual(rep.Tracking.Intervals, 16+1)
	require.Equal(1, rep.Tracking.CoarsenedRanges)
	require.True(rep.Decision.Ready, "a notice does not reset the gate: %v", rep.Decision.Reasons)
	// A reissue into tracked ids of an older term is still caught.
	require.Equal([]Kind{KindLegacyReissue}, kinds(c.Observe(s.ok("r", 1, 1, 2, 1001))))
}

func TestSharedLegacyKeySpaceCatchesCrossRangeReissue(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "per range", true: "shared"}[shared], func(t *testing.T) {
			cfg := testConfig()
			cfg.LegacySharedKeySpace = shared
			c := newTestComparator(t, cfg)
			s := &stream{}
			require.Empty(t, c.Observe(s.ok("a", 10, 1, 1, 1)))
			fs := c.Observe(s.ok("b", 10, 5, 2, 1)) // new leader reissues a's ids to b
			if shared {
				require.Equal(t, []Kind{KindLegacyReissue}, kinds(fs))
			} else {
				require.Empty(t, fs)
			}
		})
	}
}

// TestLegacyOwnKeySpace: with a shared key space, a range listed as its own
// space (SeaweedFS volume ids) neither collides with the file keys nor
// escapes its own reissue check.
func TestLegacyOwnKeySpace(t *testing.T) {
	cfg := testConfig()
	cfg.LegacySharedKeySpace = true
	cfg.LegacyOwnKeySpace = []string{"volumes"}
	c := newTestComparator(t, cfg)
	s := &stream{}
	require.Empty(t, c.Observe(s.ok("keys/1", 10, 1, 1, 1)))
	require.Empty(t, c.Observe(s.ok("volumes", 1, 3, 1, 1)), "volume id 3 is not file key 3")
	require.Equal(t, []Kind{KindLegacyReissue}, kinds(c.Observe(s.ok("volumes", 1, 3, 2, 2))))
	require.Equal(t, []Kind{KindLegacyReissue}, kinds(c.Observe(s.ok("keys/2", 1, 5, 2, 11))), "file keys still share a space")
}

func TestFloorsCoverReissuedIDs(t *testing.T) {
	require := require.New(t)
	c := newTestComparator(t, testConfig())
	s := &stream{}
	c.Observe(s.ok("a", 10, 1, 1, 1))   // a: 1..10
	c.Observe(s.ok("a", 10, 11, 1, 11)) // a: 11..20
	c.Observe(s.ok("b", 5, 100, 1, 1))  // b: 100..104
	c.Observe(s.ok("a", 10, 15, 2, 21)) // a: reissue 15..24 under term 2
	f := c.Floors(7)
	require.Equal(uint64(24+1+7), f.For("a"))
	require.Equal(uint64(104+1+7), f.For("b"))
	require.Equal(uint64(104+1+7), f.Global)
	require.Equal(f.Global, f.For("never-seen"))
	require.Equal(uint64(1<<64-1), floorAbove(1<<64-2, 5), "saturates")
}
