package vm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/api"
)

// BenchmarkRPCAllocate measures one JSON-RPC allocate round trip on the
// owner (HTTP, decoding, group commit window, BLS signing, admission),
// without waiting for a block.
func BenchmarkRPCAllocate(b *testing.B) {
	nw := newNet(b, 1)
	nw.ready(10)
	mine := nw.rangeOf(0, "bench")
	url := nw.server(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%12 == 0 {
			b.StopTimer() // keep the 16-tx test pool from filling
			_, err := nw.round(0, 10)
			require.NoError(b, err)
			b.StartTimer()
		}
		var rep api.AllocateReply
		require.Nil(b, rpcCall(b, url, "allocate", api.AllocateArgs{Range: mine, Count: 1}, &rep))
	}
}

// BenchmarkRPCAllocatePooled measures one pooled JSON-RPC allocate on the
// owner: HTTP, decoding, the owner check and a cut from the committed pool.
// The pool holds a million ids, so the timed requests never wait for a
// refill (which would need a block).
func BenchmarkRPCAllocatePooled(b *testing.B) {
	nw := newNetWith(b, 1, []byte(`{"timestamp": 1000, "poolChunk": 1048576}`))
	nw.ready(10)
	mine := nw.rangeOf(0, "bench")
	url := nw.server(0)
	nw.pooled(0, mine, 1, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var rep api.AllocateReply
		require.Nil(b, rpcCall(b, url, "allocate", api.AllocateArgs{Range: mine, Count: 1, Pooled: true}, &rep))
	}
}
