package vm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
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

// BenchmarkBlockCertificates measures a block's life on three validators
// (an allocation signed by its owner, the block built, verified and
// accepted everywhere) with each node's certifier collecting certificates
// in the background, and with the certifiers stopped: the cost of finality
// certificates in one run (benchstat shows the two side by side).
func BenchmarkBlockCertificates(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := "certifying"
		if !on {
			name = "not-certifying"
		}
		b.Run(name, func(b *testing.B) {
			nw, _ := newGossipNet(b, 3)
			nw.ready(10)
			if !on {
				for _, v := range nw.vms {
					v.Certifier().Stop()
				}
			}
			mine := nw.rangeOf(0, "cert")
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 1}})
				require.NoError(b, err)
				_, err = nw.round(0, 10)
				require.NoError(b, err)
			}
			b.StopTimer()
			if on {
				// Every block gets covered, however fast they came.
				nw.certifiedUpTo(nw.vms[0].Chain().LastAccepted().Block.Height)
			}
		})
	}
}

// BenchmarkRPCAllocateBatchPooled measures pooled allocations sent in
// allocateBatch exchanges of 1, 8 and 64 requests, per allocation: what a
// batch saves is the exchange (HTTP, decoding, the gate), which in a node
// is dearer still (its HTTP server and the HTTP-over-gRPC hop).
func BenchmarkRPCAllocateBatchPooled(b *testing.B) {
	for _, size := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			nw := newNetWith(b, 1, []byte(`{"timestamp": 1000, "poolChunk": 1048576}`))
			nw.ready(10)
			mine := nw.rangeOf(0, "bench")
			url := nw.server(0)
			nw.pooled(0, mine, 1, 1)
			reqs := make([]api.AllocateArgs, size)
			for i := range reqs {
				reqs[i] = api.AllocateArgs{Range: mine, Count: 1, Pooled: true}
			}
			b.ResetTimer()
			for done := 0; done < b.N; done += size {
				var rep api.AllocateBatchReply
				require.Nil(b, rpcCall(b, url, "allocateBatch", api.AllocateBatchArgs{Requests: reqs}, &rep))
			}
		})
	}
}
