package execute_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// BenchmarkVerifyApplyAllocate measures execution of one owner-signed
// AllocateTx (checks, BLS signature, counters, receipt) and its apply to a
// block layer, at 1, 64 and 1024 entries per signature. The signature cache
// is off, so every iteration pays the BLS check: entries/s shows how group
// commit amortises it.
func BenchmarkVerifyApplyAllocate(b *testing.B) {
	for _, validators := range []int{5, 21, 100} {
		for _, entries := range []int{1, 64, 1024} {
			b.Run(fmt.Sprintf("validators=%d/entries=%d", validators, entries), func(b *testing.B) {
				benchVerifyApply(b, validators, entries)
			})
		}
	}
}

func benchVerifyApply(b *testing.B, validators, entries int) {
	{
		{
			w := newWorld(b, validators)
			weights := map[int]uint64{}
			for i := 0; i < validators; i++ {
				weights[i] = uint64(1 + i%4)
			}
			e := w.epoch(10, weights)
			owned := rangesOwnedBy(e, w.keys[0].NodeID, 16)
			es := make([]txs.AllocateEntry, entries)
			for i := range es {
				es[i] = txs.AllocateEntry{Range: owned[i%len(owned)], Count: 1}
			}
			tx := w.allocate(e, es...)
			s, _ := freshB(b)
			c := w.ctx(e, 1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l, err := s.NewLayer(nil)
				require.NoError(b, err)
				ch, err := execute.Tx(l, c, tx)
				require.NoError(b, err)
				require.NoError(b, l.Apply(ch))
				b.StopTimer()
				s.Reject(l)
				b.StartTimer()
			}
			b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		}
	}
}
