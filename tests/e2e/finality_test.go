//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/finality"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/tools/benchmark"
)

// TestH_Finality: every receipt of a run becomes final; each certificate
// checks out offline against the P-chain's validator set (finality.ProveReceipt
// and `schain verify`), and a tampered validator set is refused. It reports
// how long a receipt waits between accepted and final against the block
// interval of the run.
func TestH_Finality(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := router(t)
	startHeight := lastHeight(ctx, t)
	sc, err := benchmark.AttachSChain(network)
	require.NoError(err)
	countsBefore, err := sc.FinalityCounts(ctx)
	require.NoError(err, "every node exports certificate_latency_seconds")

	const workers, perWorker = 8, 6
	type run struct {
		txID     api.ID
		accepted time.Time
		final    time.Duration
	}
	var (
		mu   sync.Mutex
		runs []*run
		wg   sync.WaitGroup
	)
	started := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				c, err := r.AllocateCommitted(ctx, api.AllocateArgs{Range: fmt.Sprintf("final-%d", w), Count: 1})
				if !assertNoError(t, err, "allocate") {
					return
				}
				rn := &run{txID: c.Receipt.TxID, accepted: time.Now()}
				// Wait on the node until final (waitReceipt: the answer
				// comes when the certificate does), to time it.
				rc, err := r.WaitFinal(ctx, rn.txID)
				if err == nil && !rc.Final {
					err = fmt.Errorf("%s: wait final answered %q, not final", rn.txID, rc.Status)
				}
				if !assertNoError(t, err, "final") {
					return
				}
				rn.final = time.Since(rn.accepted)
				mu.Lock()
				runs = append(runs, rn)
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(started)
	require.Len(runs, workers*perWorker, "every receipt of the run became final")
	blocks := lastHeight(ctx, t) - startHeight
	countsAfter, err := sc.FinalityCounts(ctx)
	require.NoError(err)
	onNodes := benchmark.NewFinality(countsAfter.Sub(countsBefore), elapsed)
	require.Positive(onNodes.Counts.Count, "the nodes observed the burst's blocks becoming final")

	// Check each offline against the P-chain's set, fetched from a node's
	// P-chain (not from S-Chain).
	node := subnet.NewNode(network.Nodes[0].URI)
	sets := map[uint64]certificate.ValidatorSet{}
	for _, rn := range runs {
		rc, err := r.GetReceipt(ctx, rn.txID)
		require.NoError(err)
		require.True(rc.Final)
		vs, ok := sets[rc.Certificate.PChainHeight]
		if !ok {
			vs, err = subnet.CertificateSet(ctx, node, network.ChainID, rc.Certificate.PChainHeight, 0, 0)
			require.NoError(err)
			require.Positive(vs.ChainCreatedAt)
			sets[rc.Certificate.PChainHeight] = vs
		}
		proof, err := finality.ProveReceipt(ctx, r.GetBlock, rc, vs.NetworkID, network.ChainID, vs)
		require.NoError(err, "receipt %s", rn.txID)
		require.True(certificate.Supermajority(proof.SignedWeight, proof.TotalWeight))
	}

	// The CLI checks them too, against the P-chain of another node.
	others := []string{network.Nodes[1].URI}
	dir := t.TempDir()
	saved := filepath.Join(dir, "validators.json")
	for i, rn := range runs[:3] {
		args := []string{"verify", rn.txID.String(), "--pchain", network.Nodes[2].URI, "--json"}
		if i == 0 {
			args = append(args, "--save-validators", saved)
		}
		code, out, errOut := schainCLI(ctx, t, others, args...)
		require.Equal(0, code, "schain verify: %s %s", out, errOut)
		var proof finality.Proof
		require.NoError(json.Unmarshal([]byte(out), &proof))
		require.Positive(proof.SignedWeight)
	}

	// A validator set that is not the P-chain's is refused: one
	// validator's stake inflated, so the signers no longer hold 2/3.
	var vs certificate.ValidatorSet
	b, err := os.ReadFile(saved)
	require.NoError(err)
	require.NoError(json.Unmarshal(b, &vs))
	code, _, errOut := schainCLI(ctx, t, others, "verify", runs[0].txID.String(), "--validators", saved)
	require.Equal(0, code, "the saved set verifies: %s", errOut)
	vs.Validators = append(vs.Validators, certificate.Validator{NodeID: ids.GenerateTestNodeID(), Weight: 1 << 40})
	tampered := filepath.Join(dir, "tampered.json")
	b, err = json.Marshal(vs)
	require.NoError(err)
	require.NoError(os.WriteFile(tampered, b, 0o600))
	code, _, errOut = schainCLI(ctx, t, others, "verify", runs[0].txID.String(), "--validators", tampered)
	require.Equal(9, code, "a tampered set is refused: %s", errOut)
	require.Contains(errOut, "insufficient_stake")

	lat := make([]time.Duration, len(runs))
	for i, rn := range runs {
		lat[i] = rn.final
	}
	slices.Sort(lat)
	interval := elapsed / time.Duration(max(blocks, 1))
	t.Logf("finality: %d receipts final; accepted -> final (waitReceipt on the node) p50 %v, p90 %v, max %v; %d blocks in %v: one every %v",
		len(runs), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
		blocks, elapsed.Round(time.Millisecond), interval.Round(time.Millisecond))
	t.Logf("finality on the nodes (certificate_latency_seconds, every node): accept -> final p50 %v, p90 %v over %d block acceptances; %.2f block intervals at p50",
		onNodes.P50.Round(time.Millisecond), onNodes.P90.Round(time.Millisecond), onNodes.Counts.Count, onNodes.P50PerBlock)
}

func assertNoError(t *testing.T, err error, what string) bool {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}

func lastHeight(ctx context.Context, t *testing.T) uint64 {
	t.Helper()
	n, err := nodeClient(t, network.Nodes[0]).GetNode(ctx)
	require.NoError(t, err)
	return n.Height
}
