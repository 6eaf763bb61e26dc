package client

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFailoverWaitIsBounded: a node answering absurd rounds or K (hostile
// or broken) cannot make writes wait without end, nor overflow the bound
// into a negative one that gives up at once.
func TestFailoverWaitIsBounded(t *testing.T) {
	require.Equal(t, 2*5*time.Second+10*time.Second, failoverWait(5*time.Second, 1, 10*time.Second))
	huge := failoverWait(time.Duration(math.MaxInt64), math.MaxUint64, 10*time.Second)
	require.Equal(t, time.Duration(maxLivenessRounds+1)*maxRound+10*time.Second, huge)
	require.Positive(t, huge)
}
