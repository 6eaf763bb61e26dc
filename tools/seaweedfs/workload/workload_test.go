package workload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDuplicates(t *testing.T) {
	t0 := time.Unix(0, 0)
	per, global, ex := Duplicates([]Assigned{
		{Volume: 1, Key: 10, Count: 3, At: t0}, // 10,11,12 on volume 1
		{Volume: 2, Key: 11, Count: 1, At: t0}, // 11 on volume 2: another volume
		{Volume: 1, Key: 12, Count: 2, At: t0}, // 12 again on volume 1, and 13
		{Volume: 1, Key: 20, Count: 0, At: t0}, // count 0 counts as 1
		{Volume: 1, Key: 20, Count: 1, At: t0}, // 20 again
	})
	require.Equal(t, 2, per, "12 and 20 on volume 1")
	require.Equal(t, 3, global, "11, 12 and 20 over all volumes")
	require.Len(t, ex, 2)
}

func TestWaitsAndErr(t *testing.T) {
	t0 := time.Unix(100, 0)
	res := Result{Uploads: []Upload{
		{Done: t0.Add(3 * time.Second), Wait: time.Second},
		{Done: t0, Wait: 5 * time.Second},
		{Done: t0.Add(time.Second), Wait: 2 * time.Second},
	}}
	longest, gap := waits(res)
	require.Equal(t, 5*time.Second, longest)
	require.Equal(t, 2*time.Second, gap)
	require.NoError(t, Check{Uploads: 3, ReadBack: 3}.Err())
	require.ErrorIs(t, Check{IssuedTwice: 1}.Err(), ErrCheck)
	require.ErrorIs(t, Check{Altered: 1}.Err(), ErrCheck)
}
