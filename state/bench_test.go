package state_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
)

// BenchmarkStateRoot measures sealing a block of 10k counter changes over
// states of 10k and 1M existing keys. The root is O(changes), so the two
// should cost the same.
func BenchmarkStateRoot(b *testing.B) {
	for _, existing := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("changes=10k/existing=%d", existing), func(b *testing.B) {
			db := memdb.New()
			s, err := state.New(db, txsLimits)
			require.NoError(b, err)
			g, err := s.NewLayer(nil)
			require.NoError(b, err)
			batch := make([]state.CounterUpdate, 0, existing)
			for i := 0; i < existing; i++ {
				batch = append(batch, state.CounterUpdate{Range: fmt.Sprintf("existing-%08d", i), Next: uint64(i)})
			}
			require.NoError(b, g.Apply(&state.Changes{Counters: batch}))
			_, err = g.Seal()
			require.NoError(b, err)
			require.NoError(b, s.Accept(g, ids.ID{'g'}, nil))

			changes := make([]state.CounterUpdate, 10_000)
			for i := range changes {
				changes[i] = state.CounterUpdate{Range: fmt.Sprintf("existing-%08d", i*(existing/10_000)), Next: 1 << 40}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				l, err := s.NewLayer(nil)
				require.NoError(b, err)
				var sh ids.ID
				binary.BigEndian.PutUint64(sh[:], uint64(i))
				require.NoError(b, l.Apply(&state.Changes{Counters: changes, SigningHash: sh}))
				b.StartTimer()
				_, err = l.Seal()
				require.NoError(b, err)
				b.StopTimer()
				s.Reject(l)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkAccept measures committing one block (its layer, block bytes,
// height index and last-accepted pointer in one batch) by block size.
func BenchmarkAccept(b *testing.B) {
	for _, changes := range []int{1, 100, 10_000} {
		b.Run(fmt.Sprintf("changes=%d", changes), func(b *testing.B) {
			s, err := state.New(memdb.New(), txsLimits)
			require.NoError(b, err)
			g, err := s.NewLayer(nil)
			require.NoError(b, err)
			_, err = g.Seal()
			require.NoError(b, err)
			require.NoError(b, s.Accept(g, ids.ID{'g'}, nil))
			updates := make([]state.CounterUpdate, changes)
			for i := range updates {
				updates[i] = state.CounterUpdate{Range: fmt.Sprintf("range-%06d", i)}
			}
			blockBytes := make([]byte, 64*changes)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				l, err := s.NewLayer(nil)
				require.NoError(b, err)
				for j := range updates {
					updates[j].Next = uint64(i + 1)
				}
				var sh ids.ID
				binary.BigEndian.PutUint64(sh[:], uint64(i))
				require.NoError(b, l.Apply(&state.Changes{Counters: updates, SigningHash: sh, Round: 1}))
				_, err = l.Seal()
				require.NoError(b, err)
				var id ids.ID
				binary.BigEndian.PutUint64(id[:], uint64(i+1))
				b.StartTimer()
				require.NoError(b, s.Accept(l, id, blockBytes))
			}
		})
	}
}
