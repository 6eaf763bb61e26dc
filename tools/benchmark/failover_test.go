package benchmark

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStallAfter(t *testing.T) {
	kill, end, threshold := msec(1000), msec(5000), msec(500)
	for _, c := range []struct {
		name string
		done []time.Duration
		want Stall
	}{{
		name: "steady stream: the longest gap is the normal spacing",
		done: []time.Duration{msec(900), msec(1100), msec(1300), msec(1500), msec(4900)},
		// Largest gap 1500 -> 4900 = 3400ms, not open at the end.
		// It ends at 4900: the range allocated again 3900ms after the kill.
		want: Stall{Longest: msec(3400), Successes: 4, Recovered: msec(3900)},
	}, {
		name: "the gap counts from the last success before the kill",
		done: []time.Duration{msec(200), msec(2200), msec(2300), msec(4950)},
		want: Stall{Longest: msec(2650), Successes: 3, Recovered: msec(3950)},
	}, {
		name: "an answer in flight at the kill is not a recovery",
		done: []time.Duration{msec(900), msec(1001), msec(3000), msec(3100), msec(4800)},
		want: Stall{Longest: msec(1999), Successes: 4, Recovered: msec(2000)},
	}, {
		name: "never recovered: stalled until the end, censored",
		done: []time.Duration{msec(100), msec(950)},
		want: Stall{Longest: msec(4050), Censored: true, Recovered: -1},
	}, {
		name: "no success at all: from the kill to the end",
		want: Stall{Longest: msec(4000), Censored: true, Recovered: -1},
	}, {
		name: "a short open tail is the longest gap but not a stall",
		done: []time.Duration{msec(1000), msec(1100), msec(1200), msec(1300), msec(1400), msec(1500), msec(1600), msec(1700), msec(1800), msec(1900), msec(2000), msec(2100), msec(2200), msec(2300), msec(2400), msec(2500), msec(2600), msec(2700), msec(2800), msec(2900), msec(3000), msec(3100), msec(3200), msec(3300), msec(3400), msec(3500), msec(3600), msec(3700), msec(3800), msec(3900), msec(4000), msec(4100), msec(4200), msec(4300), msec(4400), msec(4550)},
		want: Stall{Longest: msec(450), Successes: 35, Recovered: msec(100)},
	}, {
		name: "completions after the end and unsorted input",
		done: []time.Duration{msec(3000), msec(1200), msec(9000)},
		want: Stall{Longest: msec(2000), Censored: true, Successes: 2, Recovered: -1},
	}} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, StallAfter(c.done, kill, end, threshold))
		})
	}
}

func TestRangeAndGlobalStalls(t *testing.T) {
	require := require.New(t)
	kill, end, threshold := msec(1000), msec(4000), msec(500)
	var samples []Sample
	// Range 0: allocates every 100ms throughout.
	for t := 100; t <= 4000; t += 100 {
		samples = append(samples, Sample{Range: 0, End: msec(t), Count: 1})
	}
	// Range 1: its node died with the kill; its failures do not count.
	samples = append(samples, Sample{Range: 1, End: msec(900), Count: 1})
	for t := 1100; t <= 4000; t += 300 {
		samples = append(samples, Sample{Range: 1, End: msec(t), Failed: true})
	}
	// Range 2: stalls 1.5 s after the kill, then recovers.
	for _, t := range []int{950, 1050, 2550, 2650, 3900} {
		samples = append(samples, Sample{Range: 2, End: msec(t), Count: 1})
	}
	st := RangeStalls(samples, 3, kill, end, threshold)
	require.Len(st, 3)
	require.Equal(msec(100), st[0].Longest)
	require.True(st[0].Kept(threshold))
	require.Equal(Stall{Longest: msec(3100), Censored: true, Recovered: -1}, st[1])
	require.False(st[1].Kept(threshold))
	require.Equal(msec(1500), st[2].Longest)
	require.False(st[2].Censored)
	require.False(st[2].Kept(threshold))

	// Range 0 never stopped: no global stall beyond its spacing.
	require.Equal(msec(100), GlobalStall(samples, kill, end, threshold).Longest)
	// Without range 0, the global stall is range 2's gap.
	var rest []Sample
	for _, s := range samples {
		if s.Range != 0 {
			rest = append(rest, s)
		}
	}
	require.Equal(msec(1500), GlobalStall(rest, kill, end, threshold).Longest)
}

func TestStallThreshold(t *testing.T) {
	require.Equal(t, time.Second, StallThreshold(msec(100), time.Second))
	require.Equal(t, msec(3000), StallThreshold(msec(1500), time.Second))
}

func TestFailoverReport(t *testing.T) {
	require := require.New(t)
	samples := []Sample{
		{Range: 0, End: msec(900), Count: 1}, {Range: 0, End: msec(1200), Count: 1}, {Range: 0, End: msec(1500), Count: 1}, {Range: 0, End: msec(1800), Count: 1},
		{Range: 1, End: msec(900), Count: 1},
	}
	f := NewFailoverReport("n2", []string{"a", "b"}, []string{"n1", "n2"}, samples, msec(1000), msec(2000), msec(500))
	require.Equal(1, f.Kept)
	require.InDelta(0.5, f.KeptFraction(), 1e-9)
	require.Equal("n2", f.Ranges[1].Owner)
	require.True(f.Longest.Censored)
	require.Equal(msec(1100), f.Longest.Longest)
	require.Equal(f.Longest, f.LongestVictim)
	require.Equal(msec(300), f.LongestOthers.Longest)
	require.Equal(1, f.victimRanges())
	require.Equal(uint64(5), f.Load.Requests)
}
