package schainseq

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

// Reservation is an accepted allocation: ids [Base, Base+Count) of Range,
// committed on chain to this master's token (a pairs file records it).
type Reservation struct {
	Range string `json:"range"`
	Base  uint64 `json:"base"`
	Count uint64 `json:"count"`
	TxID  string `json:"txID"`
	Owner string `json:"owner"`
	// PChainHeight is the P-chain height the reservation was pinned to (0
	// for a pooled answer).
	PChainHeight uint64 `json:"pChainHeight"`
}

// End is the first id after the reservation.
func (r Reservation) End() uint64 { return r.Base + r.Count }

// chainClient is a master's S-Chain client: package client's Router (each
// write to its range's owner, NotOwner hints followed, the one retry
// policy), as the patch copies it into SeaweedFS.
type chainClient struct {
	r      *client.Router
	floors floors
}

// floors are the cutover floors a master read fresh. A floor is recorded
// once per cutover, while the masters run stock, and only goes up; so its
// first fresh read serves the master's life, and a refill never needs the
// nodes of a quorum of the stake to answer again.
type floors struct {
	mu   sync.Mutex
	read map[string]uint64 // guarded by mu; range → its floor, once non-zero
}

// answerMargin is left of a caller's deadline for the node's answer to a
// wait to travel back: the node gives up first and names the transaction.
const answerMargin = 100 * time.Millisecond

func newChainClient(cfg Config) (*chainClient, error) {
	rc := client.DefaultRouterConfig()
	rc.Client.Token = cfg.Token
	rc.Client.Timeout = cfg.RequestTimeout
	rc.Client.WaitTimeout = cfg.RefillTimeout
	rc.Client.MaxResponseBytes = 1 << 20
	// The master's bounds (schain_refill_timeout, schain_wait,
	// schain_shadow_timeout) end its calls; the back-off is the policy's.
	rc.Retry.MaxAttempts = math.MaxInt32
	uris := make([]string, 0, len(cfg.RPC))
	for _, u := range cfg.RPC {
		if u = strings.TrimSpace(u); u != "" && !strings.Contains(u, "://") {
			u = "http://" + u
		}
		if u != "" {
			uris = append(uris, u)
		}
	}
	r, err := client.NewRouter(uris, cfg.Chain, rc)
	if err != nil {
		return nil, err
	}
	return &chainClient{r: r, floors: floors{read: map[string]uint64{}}}, nil
}

// Reserve reserves count ids of rng at or above from and waits until the
// reservation is accepted (final: until a finality certificate covers its
// block). A transaction whose wait runs out is followed to its decision
// (client.Router.AllocateCommitted), never sent again; one abandoned at the
// caller's deadline is skipped if accepted after all (nobody else can be
// given its ids), which is always safe.
func (c *chainClient) Reserve(ctx context.Context, rng string, count, from uint64, final bool) (Reservation, error) {
	args := api.AllocateArgs{Range: rng, Count: count, Floor: from, Wait: api.WaitAccepted}
	if final {
		args.Wait = api.WaitFinal
	}
	if deadline, ok := ctx.Deadline(); ok {
		args.WaitMs = uint64(max(time.Until(deadline)-answerMargin, time.Millisecond) / time.Millisecond)
	}
	got, err := c.r.AllocateCommitted(ctx, args)
	if err != nil {
		return Reservation{}, fmt.Errorf("allocate %d of %q: %w", count, rng, err)
	}
	return Reservation{Range: rng, Base: got.Entry.Base, Count: got.Entry.Count, TxID: got.Receipt.TxID.String(),
		Owner: owner(got.Reply.Owner), PChainHeight: got.Reply.PChainHeight}, nil
}

// Pooled takes count ids of rng from its owner's committed pool: an answer
// without a block round trip, ids already committed to the owner.
func (c *chainClient) Pooled(ctx context.Context, rng string, count uint64) (Reservation, error) {
	rep, err := c.r.Allocate(ctx, api.AllocateArgs{Range: rng, Count: count, Pooled: true})
	if err != nil {
		return Reservation{}, fmt.Errorf("pooled allocate %d of %q: %w", count, rng, err)
	}
	return Reservation{Range: rng, Base: rep.Base, Count: rep.Count, TxID: rep.TxID.String(), Owner: owner(rep.Owner)}, nil
}

// Floor is the cutover floor recorded in rng (its next unissued id), read
// fresh: the largest among nodes holding more than 2/3 of the stake
// (client.Fresh), so a node that lags behind the cutover cannot lower it.
// Zero means no cutover was recorded (not kept: a cutover may follow).
func (c *chainClient) Floor(ctx context.Context, rng string) (uint64, error) {
	c.floors.mu.Lock()
	f, ok := c.floors.read[rng]
	c.floors.mu.Unlock()
	if ok {
		return f, nil
	}
	rep, err := c.r.Fresh().GetAllocation(ctx, rng)
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", rng, err)
	}
	if rep.Next > 0 {
		c.floors.mu.Lock()
		c.floors.read[rng] = max(c.floors.read[rng], rep.Next)
		c.floors.mu.Unlock()
	}
	return rep.Next, nil
}

func owner(id api.NodeID) string {
	if id == (api.NodeID{}) {
		return ""
	}
	return id.String()
}
