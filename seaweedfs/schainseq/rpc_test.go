package schainseq

import (
	"context"
	"go/parser"
	"go/token"

	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/seaweedfs/schaintest"
	"github.com/s-chain/schain/vm/api"
)

// TestImportsOnlyStandardLibrary keeps the patch from touching SeaweedFS's
// module graph: every non-test file imports the standard library only.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var checked int
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range af.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			first, _, _ := strings.Cut(path, "/")
			require.NotContains(t, first, ".", "%s imports %s: the weed patch may use only the standard library", f, path)
		}
		checked++
	}
	require.Positive(t, checked)
}

// TestCodesMatchTheAPI: the restated error codes are the API's.
func TestCodesMatchTheAPI(t *testing.T) {
	require := require.New(t)
	require.Equal(api.CodeNotOwner, codeNotOwner)
	require.Equal(api.CodeNotReady, codeNotReady)
	require.Equal(api.CodeMempoolFull, codeMempoolFull)
	require.Equal(api.CodeRejected, codeRejected)
	require.Equal(api.CodeTimeout, codeTimeout)
	require.Equal(api.CodeUnauthorized, codeUnauthorized)
	require.Equal(api.CodeTooManyRequests, codeTooManyRequests)
	require.Equal(api.CodeLeaseHeld, codeLeaseHeld)
	require.Equal(api.CodeLeaseLost, codeLeaseLost)
}

func newTestClient(t *testing.T, c *schaintest.Chain, token string) *Client {
	cl, err := NewClient(ClientConfig{URIs: c.URIs, Chain: c.ChainID.String(), Token: token, Timeout: time.Second})
	require.NoError(t, err)
	return cl
}

func TestReserveRoutesToTheOwnerAndHonoursTheFloor(t *testing.T) {
	require := require.New(t)
	chain := schaintest.New(t, 3)
	cl := newTestClient(t, chain, schaintest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	owners := map[int]bool{}
	for i := range 12 {
		rng := KeyRange("c", uint32(i), 1)
		owners[chain.Owner(rng)] = true
		r, err := cl.Reserve(ctx, rng, 100, 5000)
		require.NoError(err)
		require.Equal(rng, r.Range)
		require.Equal(uint64(5000), r.Base, "a fresh range starts at the floor")
		require.Equal(uint64(100), r.Count)
		require.Equal(chain.NodeIDs[chain.Owner(rng)].String(), r.Owner)
		r2, err := cl.Reserve(ctx, rng, 10, 5000)
		require.NoError(err)
		require.Equal(uint64(5100), r2.Base, "the counter moved past the first reservation")
	}
	require.Len(owners, 3, "the ranges spread over the nodes")
	require.NoError(chain.CheckUnique())
}

func TestReserveRetriesNotReadyAndFollowsAMovedOwner(t *testing.T) {
	require := require.New(t)
	chain := schaintest.New(t, 3)
	cl := newTestClient(t, chain, schaintest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	chain.SetNotReady(3)
	_, err := cl.Reserve(ctx, "r", 1, 0)
	require.NoError(err, "NotReady is retried")

	// The owner dies: the client re-resolves and reaches the new owner.
	victim := chain.Owner("r")
	chain.SetDown(victim, true)
	res, err := cl.Reserve(ctx, "r", 1, 0)
	require.NoError(err)
	require.NotEqual(chain.NodeIDs[victim].String(), res.Owner)
	require.NoError(chain.CheckUnique())
}

func TestReserveFailsForGoodWithoutAValidToken(t *testing.T) {
	chain := schaintest.New(t, 1)
	cl := newTestClient(t, chain, "wrong")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := cl.Reserve(ctx, "r", 1, 0)
	require.ErrorIs(t, err, ErrRefused)
	require.Contains(t, err.Error(), "write token")
	require.Less(t, time.Since(start), 5*time.Second, "a refusal is not retried until the deadline")
	require.Equal(t, 1, chain.Calls("allocate"))
}

func TestReserveGivesUpAtTheDeadlineWhenNoNodeAnswers(t *testing.T) {
	chain := schaintest.New(t, 2)
	chain.SetDown(0, true)
	chain.SetDown(1, true)
	cl := newTestClient(t, chain, schaintest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := cl.Reserve(ctx, "r", 1, 0)
	require.ErrorIs(t, err, ErrUnreachable)
	require.Empty(t, chain.Issued())
}

func TestPooledAndNext(t *testing.T) {
	require := require.New(t)
	chain := schaintest.New(t, 2)
	cl := newTestClient(t, chain, schaintest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, err := cl.Next(ctx, "p")
	require.NoError(err)
	require.Zero(next)
	a, err := cl.Pooled(ctx, "p", 3)
	require.NoError(err)
	b, err := cl.Pooled(ctx, "p", 3)
	require.NoError(err)
	require.Equal(a.End(), b.Base)
	next, err = cl.Next(ctx, "p")
	require.NoError(err)
	require.Equal(uint64(schaintest.PoolChunk), next, "the pool's chunk is committed")
}

func TestReservationOfRefusesAnAnswerThatIsNotOurs(t *testing.T) {
	args := allocateArgs{Range: "r", Count: 10, Floor: 100, Wait: true}
	ok := allocateReply{TxID: "t", Index: 0, Receipt: &receipt{TxID: "t", Status: "accepted", Entries: []receiptEntry{{Range: "r", Base: 100, Count: 10}}}}
	res, err := reservationOf(args, ok)
	require.NoError(t, err)
	require.Equal(t, uint64(100), res.Base)

	for name, rep := range map[string]allocateReply{
		"no receipt":  {TxID: "t"},
		"other range": {Receipt: &receipt{Status: "accepted", Entries: []receiptEntry{{Range: "x", Base: 100, Count: 10}}}},
		"other count": {Receipt: &receipt{Status: "accepted", Entries: []receiptEntry{{Range: "r", Base: 100, Count: 9}}}},
		"below floor": {Receipt: &receipt{Status: "accepted", Entries: []receiptEntry{{Range: "r", Base: 99, Count: 10}}}},
		"bad index":   {Index: 3, Receipt: &receipt{Status: "accepted", Entries: []receiptEntry{{Range: "r", Base: 100, Count: 10}}}},
		"pending":     {Receipt: &receipt{Status: "pending"}},
	} {
		_, err := reservationOf(args, rep)
		require.ErrorIs(t, err, ErrRefused, name)
	}
	_, err = reservationOf(args, allocateReply{Receipt: &receipt{Status: "rejected", Error: "rejected: owner changed: range \"r\" is owned by X"}})
	require.ErrorIs(t, err, errResend, "a rejected transaction reserved nothing: send again")
}
