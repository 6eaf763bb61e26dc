package cutover

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// newChain is the fake S-Chain of these tests: n nodes, ranges spread over
// the nodes, writes with apitest.Token.
func newChain(t *testing.T, n int) *apitest.Net {
	c := apitest.New(t, n)
	c.SpreadOwners()
	c.RequireToken(apitest.Token)
	return c
}

func router(t *testing.T, c *apitest.Net) client.Fresh {
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = apitest.Token
	r, err := client.NewRouter(c.URIs(), c.ChainID.String(), cfg)
	require.NoError(t, err)
	return r.Fresh()
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestPlan(t *testing.T) {
	require.Equal(t, Floors{FileKey: 1_000_101, VolumeID: 24}, Plan(Bounds{MaxFileKey: 100, MaxVolumeID: 7}, DefaultMargins()))
	require.Equal(t, Floors{FileKey: 1, VolumeID: 1}, Plan(Bounds{}, Margins{}), "a fresh cluster starts at 1")
	require.Equal(t, uint64(math.MaxUint64), Plan(Bounds{MaxFileKey: math.MaxUint64 - 3}, Margins{FileKey: 10}).FileKey, "saturates")
}

// TestRecordOnlyRaises: recording sets the floor ranges' counters, a second
// cutover with lower floors changes nothing, a higher one raises them.
func TestRecordOnlyRaises(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	r := router(t, chain)
	got, err := Record(ctx(t), r, "c", Floors{FileKey: 5000, VolumeID: 40})
	require.NoError(err)
	require.Equal(Floors{FileKey: 5000, VolumeID: 40}, got)
	require.Equal(uint64(5000), chain.Counter(schainseq.KeyFloorRange("c")))

	got, err = Record(ctx(t), r, "c", Floors{FileKey: 10, VolumeID: 1})
	require.NoError(err)
	require.Equal(Floors{FileKey: 5000, VolumeID: 40}, got, "floors never go down")

	got, err = Record(ctx(t), r, "c", Floors{FileKey: 9000, VolumeID: 40})
	require.NoError(err)
	require.Equal(uint64(9000), got.FileKey)
	rec, err := Recorded(ctx(t), r, "c")
	require.NoError(err)
	require.Equal(got, rec)

	_, err = Record(ctx(t), r, "c", Floors{VolumeID: 1 << 33})
	require.ErrorIs(err, errVolumeIDTooLarge)
}

// TestSChainBoundsCoverEveryReservation: the rollback bounds are above
// every id S-Chain reserved for the cluster, handed out or not.
func TestSChainBoundsCoverEveryReservation(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 2)
	r := router(t, chain)
	_, err := Record(ctx(t), r, "c", Floors{FileKey: 100, VolumeID: 5})
	require.NoError(err)
	chain.SetCounter(schainseq.VolumeRange("c"), 9)      // volumes 5..8 issued
	chain.SetCounter(schainseq.KeyRange("c", 6, 1), 777) // volume 6's keys up to 776
	chain.SetCounter(schainseq.KeyRange("c", 8, 1), 300)
	chain.SetCounter(schainseq.KeyRange("c", 9, 1), 1e9) // a volume id never issued: not the cluster's
	var last int
	b, err := SChainBounds(ctx(t), r, "c", 1, func(done, total int) { last = total })
	require.NoError(err)
	require.Equal(uint64(776), b.MaxFileKey)
	require.Equal(uint64(8), b.MaxVolumeID)
	require.Equal(9, last, "one key range per volume id below the volume range's next")
	seq := RollbackSequencer(Plan(b, Margins{}))
	require.Equal(map[string]string{"file_key_floor": "777", "volume_id_floor": "9"}, seq)
}

// fakeCluster serves the masters' and volume servers' status pages.
func fakeCluster(t *testing.T, maxFileKeys map[string]uint64) []string {
	vs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ans := map[string]any{"Volumes": []map[string]any{{"Id": 3}, {"Id": 12}}}
		if maxFileKeys != nil {
			ans["MaxFileKeys"] = maxFileKeys
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(vs.Close)
	vsAddr := strings.TrimPrefix(vs.URL, "http://")
	var masters []string
	for i := range 3 {
		m := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/cluster/status":
				_ = json.NewEncoder(w).Encode(map[string]any{"IsLeader": i == 1, "MaxVolumeId": 10 + i})
			case "/dir/status":
				_ = json.NewEncoder(w).Encode(map[string]any{"Topology": map[string]any{"DataCenters": []any{
					map[string]any{"Racks": []any{map[string]any{"DataNodes": []any{map[string]any{"Url": vsAddr}}}}},
				}}})
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(m.Close)
		masters = append(masters, strings.TrimPrefix(m.URL, "http://"))
	}
	return masters
}

func TestFromCluster(t *testing.T) {
	require := require.New(t)
	b, err := FromCluster(ctx(t), fakeCluster(t, map[string]uint64{"3": 1200, "12": 99}))
	require.NoError(err)
	require.Equal(uint64(1200), b.MaxFileKey)
	require.Equal(uint64(12), b.MaxVolumeID, "the volume server's 12 beats the masters' 12 at most")
	require.Len(b.Sources, 4)

	_, err = FromCluster(ctx(t), fakeCluster(t, nil))
	require.ErrorContains(err, "MaxFileKeys", "a stock volume server's keys are unknown")
}

func TestFromShadowReport(t *testing.T) {
	require := require.New(t)
	dir := t.TempDir()
	_, err := FromShadowReport(dir)
	require.ErrorContains(err, "no shadow report")
	require.NoError(os.WriteFile(filepath.Join(dir, "report.json"), []byte(`{"report":{"tracking":{"legacy_max_id":77}}}`), 0o644))
	b, err := FromShadowReport(dir)
	require.NoError(err)
	require.Equal(uint64(77), b.MaxFileKey)
	require.NoError(os.WriteFile(filepath.Join(dir, "seaweedfs.json"), []byte(`{"legacy_max_key":99,"legacy_max_volume_id":12}`), 0o644))
	b, err = FromShadowReport(dir)
	require.NoError(err)
	require.Equal(Bounds{MaxFileKey: 99, MaxVolumeID: 12, Sources: b.Sources}, b)
}

// TestRollbackBoundsNeverComeFromALaggingNode (issue 30, finding 1): with
// node A current and node B one reservation behind, a rollback that read a
// key range's counter through B bounded it at 99 instead of 3,145,827, and
// the file_key_floor it printed (1,000,100 with the default margin) let
// the stock master issue keys [1,000,100, 3,145,828) a second time. Every
// bound comes from the newest state of nodes holding more than 2/3 of the
// stake.
func TestRollbackBoundsNeverComeFromALaggingNode(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 4)
	r := router(t, chain)
	chain.SetCounter(schainseq.VolumeRange("c"), 1)
	chain.SetCounter(schainseq.KeyRange("c", 0, 1), 99)
	chain.Nodes[1].Freeze()
	chain.SetCounter(schainseq.KeyRange("c", 0, 1), 3_145_827)
	for range 4 { // reads rotate over the nodes: each bound is read through each
		_, err := r.GetNode(ctx(t))
		require.NoError(err)
		b, err := SChainBounds(ctx(t), r, "c", 1, nil)
		require.NoError(err)
		require.Equal(uint64(3_145_826), b.MaxFileKey, "the newest counter, not the lagging node's")
		require.Greater(Plan(b, DefaultMargins()).FileKey, uint64(3_145_827))
	}
}
