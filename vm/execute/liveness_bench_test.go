package execute_test

import (
	"fmt"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// BenchmarkLivenessRound measures what one liveness round costs a validator
// on an idle chain, at 3 and 21 validators: the round's heartbeats (one per
// validator, each a BLS check: the signature cache is off) executed in
// blocks that open the round's membership, seal (state root) and accept.
// "one-block" carries every heartbeat in the round's first block (the
// heartbeats sent ahead of the round, the usual case); "block-each" builds a
// block per heartbeat (the worst case: heartbeats arriving one by one on an
// idle chain). The cost per round does not depend on the round's length, so
// the benchmark reports it per second of chain time for rounds of 5, 10 and
// 30 s ("µs/s@5s": microseconds of CPU per second with 5 s rounds): the
// price of a faster failover (docs/concepts/liveness.md, Choosing the round).
func BenchmarkLivenessRound(b *testing.B) {
	for _, validators := range []int{3, 21} {
		for _, each := range []bool{false, true} {
			name := "one-block"
			if each {
				name = "block-each"
			}
			b.Run(fmt.Sprintf("validators=%d/%s", validators, name), func(b *testing.B) {
				benchLivenessRound(b, validators, each)
			})
		}
	}
}

func benchLivenessRound(b *testing.B, validators int, blockEach bool) {
	w := newWorld(b, validators)
	weights := map[int]uint64{}
	for i := 0; i < validators; i++ {
		weights[i] = 1
	}
	v := w.set(10, weights)
	s, l := freshB(b)
	s.Reject(l)
	live := execute.Liveness{RoundMs: 5000, K: 1, TxLifetime: 4}
	height := uint64(1)
	// Every round's heartbeats are signed before the timer runs: signing
	// is each validator's own cost, once per round, not the chain's.
	beats := func(round uint64) []*txs.Tx {
		out := make([]*txs.Tx, validators)
		for i := range out {
			w.nonce++
			tx, err := w.keys[i].Sign(&txs.HeartbeatTx{Header: txs.Header{
				NetworkID: testNetwork, ChainID: testChain, PChainHeight: v.Height(), Owner: w.keys[i].NodeID, Nonce: w.nonce, Round: round,
			}})
			require.NoError(b, err)
			out[i] = tx
		}
		return out
	}
	block := func(round uint64, blockTxs []*txs.Tx) {
		l, err := s.NewLayer(nil)
		require.NoError(b, err)
		height++
		c := &execute.Context{NetworkID: testNetwork, ChainID: testChain, Limits: txs.DefaultLimits(),
			Validators: v, Round: round, Liveness: live, Height: height}
		require.NoError(b, execute.Block(l, c, blockTxs))
		_, err = l.Seal()
		require.NoError(b, err)
		require.NoError(b, s.Accept(l, ids.ID{byte(height), byte(height >> 8), byte(height >> 16), 'r'}, nil))
	}
	rounds := make([][]*txs.Tx, b.N)
	for i := range rounds {
		rounds[i] = beats(uint64(i + 1))
	}
	b.ResetTimer()
	for i, hb := range rounds {
		round := uint64(i + 1)
		if !blockEach {
			block(round, hb)
			continue
		}
		for _, tx := range hb {
			block(round, []*txs.Tx{tx})
		}
	}
	b.StopTimer()
	perRound := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	for _, seconds := range []int{5, 10, 30} {
		b.ReportMetric(perRound/1e3/float64(seconds), fmt.Sprintf("µs/s@%ds", seconds))
	}
}
