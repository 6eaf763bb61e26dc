package benchmark

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCountFlaps(t *testing.T) {
	require := require.New(t)
	t0 := time.Unix(1_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	sample := func(s int, round, gen uint64, members ...string) MembershipSample {
		return MembershipSample{At: at(s), Round: round, Generation: gen, Members: members}
	}
	samples := []MembershipSample{
		sample(0, 10, 0, "a", "b", "c"),
		sample(5, 11, 1, "a", "b"),      // c flaps (alive)
		sample(6, 11, 0, "a", "b", "c"), // a lagging node: skipped
		sample(10, 12, 2, "a", "b", "c"),
		// b is killed at 12.
		sample(15, 13, 2, "a", "b", "c"),
		sample(20, 14, 3, "a", "c"), // b leaves: expected
		{At: at(25), Round: 15, Generation: 4, Fallback: true, Members: []string{"a", "b", "c"}}, // b back: bounced
		sample(30, 16, 5, "a", "c"),
	}
	f := CountFlaps(samples, "", time.Time{}, at(0), at(12))
	require.Equal(Flaps{Rounds: 3, Changes: 2, AliveOut: 1}, f)

	f = CountFlaps(samples, "b", at(12), at(12), at(40))
	require.Equal(Flaps{Rounds: 4, Changes: 3, DeadBack: 1, Fallbacks: 1}, f)

	// Windows add up.
	f = CountFlapsIn(samples, []Window{{From: at(0), To: at(12)}, {From: at(0), To: at(12)}})
	require.Equal(Flaps{Rounds: 6, Changes: 4, AliveOut: 2}, f)
}
