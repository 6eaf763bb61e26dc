package legacy

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorClassification(t *testing.T) {
	cause := context.DeadlineExceeded
	tests := []struct {
		name        string
		err         error
		unavailable bool
		rejected    bool
		hint        string
	}{
		{name: "not leader", err: &NotLeaderError{LeaderID: "n2", LeaderHint: "127.0.0.1:9"}, unavailable: true, hint: "127.0.0.1:9"},
		{name: "wrapped not leader", err: fmt.Errorf("allocate: %w", &NotLeaderError{LeaderHint: "h", Cause: cause}), unavailable: true, hint: "h"},
		{name: "warming up", err: fmt.Errorf("%w: warming up", ErrUnavailable), unavailable: true},
		{name: "rejected", err: fmt.Errorf("%w: count 0", ErrRejected), rejected: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require := require.New(t)
			require.Equal(tt.unavailable, errors.Is(tt.err, ErrUnavailable))
			require.Equal(tt.rejected, errors.Is(tt.err, ErrRejected))
			require.Equal(tt.hint, LeaderHint(tt.err))
		})
	}
	require.ErrorIs(t, &NotLeaderError{Cause: cause}, cause)
}

func TestResultEnd(t *testing.T) {
	require.Equal(t, uint64(15), Result{First: 5, Count: 10}.End())
}
