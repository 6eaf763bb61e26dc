package seaweed

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

func TestCollection(t *testing.T) {
	long := strings.Repeat("b", 64)
	tests := []struct {
		rangeKey string
		want     string
	}{
		{rangeKey: "photos", want: "photos"},
		{rangeKey: "photos/2026/01", want: "photos"},
		{rangeKey: "my-bucket.v2", want: "my-bucket.v2"},
		{rangeKey: "r", want: "r"},
		{rangeKey: "Photos", want: "photos-0fdae5ef"},
		{rangeKey: "a_b", want: "a-b-28cb39ea"},
		{rangeKey: "-x-", want: "x-6deda32a"},
		{rangeKey: "a..b", want: "a--b-38b62dc8"},
		{rangeKey: "___", want: "r-5e56bd61"},
		{rangeKey: long, want: strings.Repeat("b", 54) + "-0b747ffe"},
	}
	for _, tt := range tests {
		t.Run(tt.rangeKey, func(t *testing.T) {
			require := require.New(t)
			got, err := Collection(tt.rangeKey)
			require.NoError(err)
			require.True(safeCollection(got), "%q is not a safe collection name", got)
			require.Equal(tt.want, got)
			again, err := Collection(tt.rangeKey)
			require.NoError(err)
			require.Equal(got, again)
		})
	}
	_, err := Collection("")
	require.ErrorIs(t, err, legacy.ErrRejected)
	_, err = Collection("/band")
	require.ErrorIs(t, err, legacy.ErrRejected)
	a, _ := Collection("A_b")
	b, _ := Collection("a_B")
	require.NotEqual(t, a, b, "distinct unsafe buckets get distinct collections")
}
