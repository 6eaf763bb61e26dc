package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// writeWeedPairs writes n agreeing pairs of one shadow master to dir.
func writeWeedPairs(t *testing.T, dir string, n int) {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, schainseq.PairsFile))
	require.NoError(t, err)
	defer f.Close()
	enc := json.NewEncoder(f)
	t0 := time.Unix(1000, 0)
	for i := range n {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		rng := schainseq.KeyRange("sw", uint32(1+i%3), 1)
		require.NoError(t, enc.Encode(schainseq.Pair{
			Seq: uint64(i + 1), Issued: at, At: at, Master: "m1:9333", Term: 1, Kind: schainseq.KindKey, Range: rng, Volume: uint32(1 + i%3),
			Legacy: &schainseq.LegacyAnswer{First: uint64(i + 1), Count: 1},
			SChain: &schainseq.Reservation{Range: rng, Base: uint64(100 + i), Count: 1, TxID: "t", Owner: "o"},
		}))
	}
	require.NoError(t, enc.Encode(schainseq.Pair{At: t0.Add(time.Hour), Master: "m1:9333", Term: 1, Kind: schainseq.KindState,
		State: &schainseq.ShadowState{Offered: uint64(n + 2), Dropped: 2, Mirrored: uint64(n), LegacyMaxKey: uint64(n + 2)}}))
}

func TestWeedShadowGate(t *testing.T) {
	require := require.New(t)
	pairsDir, out := filepath.Join(t.TempDir(), "m1"), t.TempDir()
	writeWeedPairs(t, pairsDir, 200)
	code, stdout, stderr := run(t, "seaweedfs", "shadow", "--prefix", "sw", "--pairs", pairsDir, "--out", out,
		"--gate-requests", "100", "--gate-duration", "1s")
	require.Equal(exitOK, code, stderr)
	require.Contains(stdout, "cutover gate: READY")
	require.Contains(stdout, "mirrors: 202 offered, 2 dropped (queue full)")
	require.Contains(stdout, "legacy max key 202")
	for _, f := range []string{"report.json", "summary.txt", "seaweedfs.json"} {
		require.FileExists(filepath.Join(out, f))
	}
	require.NoFileExists(filepath.Join(out, "latency-cdf.png"), "the plots are schain-dev's")

	code, stdout, _ = run(t, "seaweedfs", "shadow", "--prefix", "sw", "--pairs", pairsDir, "--out", out, "--gate-requests", "1000")
	require.Equal(exitNotReady, code)
	require.Contains(stdout, "clean window has 200 of 1000 requests")
}

// TestWeedCutoverAndRollbackOfYourOwnCluster: with a shadow report and
// --chain, cutover records floors above it and prints the schain table;
// rollback prints the stock table above every S-Chain reservation.
func TestWeedCutoverAndRollbackOfYourOwnCluster(t *testing.T) {
	require := require.New(t)
	chain := apitest.New(t, 2)
	chain.SpreadOwners()
	chain.RequireToken(apitest.Token)
	report := t.TempDir()
	require.NoError(os.WriteFile(filepath.Join(report, "seaweedfs.json"), []byte(`{"legacy_max_key":5000,"legacy_max_volume_id":9}`), 0o644))
	global := []string{"--rpc", chain.URIs()[0] + "," + chain.URIs()[1], "--chain", chain.ChainID.String(), "--token", apitest.Token}

	code, stdout, stderr := run(t, append(global, "seaweedfs", "cutover", "--prefix", "own", "--report", report, "--dry-run")...)
	require.Equal(exitOK, code, stderr)
	require.Contains(stdout, "would record: file keys >= 1005001, volume ids >= 26 (dry run)")
	require.Zero(chain.Counter(schainseq.KeyFloorRange("own")))

	code, stdout, stderr = run(t, append(global, "seaweedfs", "cutover", "--prefix", "own", "--report", report, "--margin", "10", "--volume-margin", "1")...)
	require.Equal(exitOK, code, stderr)
	require.Contains(stdout, "recorded on S-Chain: file keys >= 5011, volume ids >= 11")
	require.Contains(stdout, `type = "schain"`)
	require.Contains(stdout, `schain_prefix = "own"`)
	require.Equal(uint64(5011), chain.Counter(schainseq.KeyFloorRange("own")))

	chain.SetCounter(schainseq.VolumeRange("own"), 13)
	chain.SetCounter(schainseq.KeyRange("own", 12, 1), 90000)
	code, stdout, stderr = run(t, append(global, "seaweedfs", "rollback", "--prefix", "own")...)
	require.Equal(exitOK, code, stderr)
	require.Contains(stdout, "S-Chain bounds: file key 89999, volume id 12")
	require.Contains(stdout, `file_key_floor = "90000"`)
	require.Contains(stdout, `volume_id_floor = "13"`)
}
