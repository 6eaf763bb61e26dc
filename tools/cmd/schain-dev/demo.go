package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tests/framework/localnet"
)

func newDemoCmd(g *cli.Globals) *cobra.Command {
	var buildDir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Exercise the local network: owners, allocations on every node, a manifest read back everywhere",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := localnet.Open(cmd.Context(), filepath.Join(buildDir, "network"), nil)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Minute)
			defer cancel()
			return runDemo(ctx, g, n)
		},
	}
	cmd.Flags().StringVar(&buildDir, "build-dir", cli.DefaultBuildDir(), "directory with the network data")
	return cmd
}

// demoReport is what the demo saw, for --json; the readable form is
// written as the demo goes.
type demoReport struct {
	Membership  *api.MembershipReply `json:"membership"`
	Owners      []demoOwner          `json:"owners"`
	Allocations []demoAllocation     `json:"allocations"`
	Pooled      []demoAllocation     `json:"pooled"`
	Manifest    demoManifest         `json:"manifest"`
	// Unallocated is the refusal of a manifest on an unallocated id.
	Unallocated string `json:"unallocated"`
	// NotOwner is a non-owner's answer to a write of the bucket.
	NotOwner *api.NotOwnerData   `json:"notOwner,omitempty"`
	Receipts []*api.ReceiptReply `json:"receipts"`
	Nodes    []*api.NodeReply    `json:"nodes"`
	RPC      []string            `json:"rpc"`
	Token    string              `json:"tokenFile"`
}

type demoOwner struct {
	Range string     `json:"range"`
	Owner api.NodeID `json:"owner"`
}

type demoAllocation struct {
	Range     string     `json:"range"`
	Owner     api.NodeID `json:"owner"`
	TxID      api.ID     `json:"txID"`
	Base      uint64     `json:"base"`
	Count     uint64     `json:"count"`
	Height    uint64     `json:"height,omitempty"`
	LatencyMs int64      `json:"latencyMs"`
}

type demoManifest struct {
	Bucket   string         `json:"bucket"`
	Key      string         `json:"key"`
	TxID     api.ID         `json:"txID"`
	ReadBack []demoReadBack `json:"readBack"`
}

type demoReadBack struct {
	NodeID api.NodeID `json:"nodeID"`
	Size   uint64     `json:"size"`
	Chunks []uint64   `json:"chunkIDs"`
}

func runDemo(ctx context.Context, g *cli.Globals, n *localnet.Network) error {
	w := g.Notes()
	rep := demoReport{RPC: n.ChainURIsBase(), Token: n.TokenPath()}
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = n.Token
	r, err := client.NewRouter(n.ChainURIsBase(), n.ChainID.String(), cfg)
	if err != nil {
		return err
	}
	names := map[api.NodeID]string{}
	for i, nd := range n.Nodes {
		names[api.NodeID(nd.NodeID)] = fmt.Sprintf("node%d", i+1)
	}

	ep, err := r.GetMembership(ctx)
	if err != nil {
		return err
	}
	rep.Membership = ep
	fmt.Fprintf(w, "\n== membership: P-chain height %d, liveness round %d, fingerprint %s\n", ep.PChainHeight, ep.Round, ep.Fingerprint)
	for _, v := range ep.Validators {
		fmt.Fprintf(w, "   %-6s %s\n", names[v.NodeID], cli.DescribeLiveness(v))
	}

	fmt.Fprintf(w, "\n== owners (HRW over the membership's members)\n")
	owned := map[api.NodeID]string{}
	for i := 0; i < 12 || len(owned) < len(n.Nodes); i++ {
		rk := fmt.Sprintf("demo-bucket-%02d", i)
		o, err := r.GetOwner(ctx, rk)
		if err != nil {
			return err
		}
		if i < 12 {
			fmt.Fprintf(w, "   %-16s -> %s\n", rk, names[o.Owner])
			rep.Owners = append(rep.Owners, demoOwner{Range: rk, Owner: o.Owner})
		}
		if _, ok := owned[o.Owner]; !ok {
			owned[o.Owner] = rk
		}
		if i > 200 {
			break
		}
	}

	fmt.Fprintf(w, "\n== allocations, each sent to its range's owner and waited for\n")
	var txIDs []api.ID
	for _, nd := range n.Nodes {
		rk, ok := owned[api.NodeID(nd.NodeID)]
		if !ok {
			continue
		}
		began := time.Now()
		res, err := r.Allocate(ctx, api.AllocateArgs{Range: rk, Count: 10})
		if err != nil {
			return fmt.Errorf("allocate on %s: %w", rk, err)
		}
		rc, err := r.WaitForReceipt(ctx, res.TxID)
		if err != nil {
			return err
		}
		e, ok := rc.Entry(res.Index)
		if !ok {
			return fmt.Errorf("receipt of %s has no entry %d", res.TxID, res.Index)
		}
		took := time.Since(began)
		fmt.Fprintf(w, "   %-16s owner %-6s ids [%d, %d) in block %d, %s\n", rk, names[res.Owner], e.Base, e.Base+e.Count, rc.Height, took.Round(time.Millisecond))
		rep.Allocations = append(rep.Allocations, demoAllocation{Range: rk, Owner: res.Owner, TxID: rc.TxID, Base: e.Base, Count: e.Count, Height: rc.Height, LatencyMs: took.Milliseconds()})
		txIDs = append(txIDs, res.TxID)
	}

	fmt.Fprintf(w, "\n== pooled allocations: answered from the owner's committed reservation, no consensus round per request\n")
	if rk, ok := owned[api.NodeID(n.Nodes[0].NodeID)]; ok {
		for i := 0; i < 3; i++ {
			began := time.Now()
			res, err := r.Allocate(ctx, api.AllocateArgs{Range: rk, Count: 4, Pooled: true})
			if err != nil {
				return fmt.Errorf("pooled allocate on %s: %w", rk, err)
			}
			took := time.Since(began)
			fmt.Fprintf(w, "   %-16s owner %-6s ids [%d, %d) from reservation %s, %s\n", rk, names[res.Owner], res.Base, res.Base+res.Count, res.TxID, took.Round(time.Millisecond))
			rep.Pooled = append(rep.Pooled, demoAllocation{Range: rk, Owner: res.Owner, TxID: res.TxID, Base: res.Base, Count: res.Count, LatencyMs: took.Milliseconds()})
		}
	}

	fmt.Fprintf(w, "\n== a manifest on reserved ids, read back from every node\n")
	bucket := owned[api.NodeID(n.Nodes[0].NodeID)]
	res, err := r.Allocate(ctx, api.AllocateArgs{Range: bucket, Count: 2})
	if err != nil {
		return err
	}
	rc, err := r.WaitForReceipt(ctx, res.TxID)
	if err != nil {
		return err
	}
	e, ok := rc.Entry(res.Index)
	if !ok {
		return fmt.Errorf("receipt of %s has no entry %d", res.TxID, res.Index)
	}
	base := e.Base
	content := []byte("hello, pinned writer")
	sum := sha256.Sum256(content)
	m := api.PutManifestArgs{Bucket: bucket, Key: "greetings/hello.txt", Size: uint64(len(content)), ContentHash: sum,
		Chunks: []api.Chunk{{Range: bucket, ID: base, Size: 10, Hash: sha256.Sum256(content[:10])}, {Range: bucket, ID: base + 1, Size: uint64(len(content) - 10), Hash: sha256.Sum256(content[10:])}}}
	put, err := r.PutManifest(ctx, m)
	if err != nil {
		return err
	}
	if _, err := r.WaitForReceipt(ctx, put.TxID); err != nil {
		return err
	}
	rep.Manifest = demoManifest{Bucket: bucket, Key: m.Key, TxID: put.TxID}
	txIDs = append(txIDs, res.TxID, put.TxID)
	for _, c := range r.Clients() {
		got, err := readManifestEventually(ctx, c, bucket, m.Key)
		if err != nil {
			return err
		}
		id := nodeOf(ctx, c)
		fmt.Fprintf(w, "   %-6s %s/%s: %d bytes in %d chunks (ids %d, %d)\n", names[id], bucket, m.Key, got.Manifest.Size, len(got.Manifest.Chunks), got.Manifest.Chunks[0].ID, got.Manifest.Chunks[1].ID)
		rb := demoReadBack{NodeID: id, Size: got.Manifest.Size}
		for _, ch := range got.Manifest.Chunks {
			rb.Chunks = append(rb.Chunks, ch.ID)
		}
		rep.Manifest.ReadBack = append(rep.Manifest.ReadBack, rb)
	}
	unallocated := m
	unallocated.Key = "greetings/bad.txt"
	unallocated.Chunks = []api.Chunk{{Range: bucket, ID: base + 1_000_000, Size: uint64(len(content)), Hash: sum}}
	bad, err := r.PutManifest(ctx, unallocated)
	if err == nil {
		var rc *api.ReceiptReply
		if rc, err = r.WaitForReceipt(ctx, bad.TxID); err == nil {
			err = client.EntryError(rc, bad.Index)
		} else if rc != nil {
			err = errors.New(rc.Error)
		}
	}
	fmt.Fprintf(w, "   a manifest on an unallocated id is refused: %v\n", err)
	if err != nil {
		rep.Unallocated = err.Error()
	}

	fmt.Fprintf(w, "\n== a non-owner refuses to write (no fallback writer)\n")
	for _, c := range r.Clients() {
		id := nodeOf(ctx, c)
		if id == api.NodeID(n.Nodes[0].NodeID) {
			continue
		}
		_, err := c.Allocate(ctx, api.AllocateArgs{Range: bucket, Count: 1})
		if d, ok := client.IsNotOwner(err); ok {
			fmt.Fprintf(w, "   %-6s: NotOwner, owner is %s (%s) at P-chain height %d\n", names[id], names[d.Owner], d.Owner, d.PChainHeight)
			rep.NotOwner = &d
		} else {
			fmt.Fprintf(w, "   %-6s: unexpected answer: %v\n", names[id], err)
		}
		break
	}

	fmt.Fprintf(w, "\n== receipts\n")
	for _, id := range txIDs {
		rc, err := r.GetReceipt(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %s %s at height %d: %d entries\n", id, rc.Status, rc.Height, len(rc.Entries))
		rep.Receipts = append(rep.Receipts, rc)
	}

	fmt.Fprintf(w, "\n== nodes agree\n")
	for _, c := range r.Clients() {
		info, err := c.GetNode(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %-6s height %d state root %s\n", names[info.NodeID], info.Height, info.StateRoot)
		rep.Nodes = append(rep.Nodes, info)
	}
	fmt.Fprintf(w, "\nRPC endpoints:\n")
	for _, nd := range n.Nodes {
		fmt.Fprintf(w, "   %s\n", n.ChainURI(nd))
	}
	// The plugins' own doors to the same API (chain config directAPI).
	var direct []string
	for _, info := range rep.Nodes {
		if info.DirectURI != "" {
			direct = append(direct, info.DirectURI+"/ext/bc/"+n.ChainID.String())
		}
	}
	if len(direct) > 0 {
		fmt.Fprintf(w, "Direct API (the same service, served by each plugin without the node's HTTP hop):\n")
		for _, u := range direct {
			fmt.Fprintf(w, "   %s\n", u)
		}
	}
	fmt.Fprintf(w, "Token: %s (schain picks it up for this chain; other clients send it as \"Authorization: Bearer <token>\")\n", n.TokenPath())
	fmt.Fprintf(w, "CLI:  export %s=%s\n      schain --rpc %s owner photos\nStop: make stop\n", cli.ChainEnv, n.ChainID, joinURIs(n))
	// The readable form was written as the demo went.
	return g.EmitText(rep, func(io.Writer) error { return nil })
}

func joinURIs(n *localnet.Network) string {
	s := ""
	for i, u := range n.ChainURIsBase() {
		if i > 0 {
			s += ","
		}
		s += u
	}
	return s
}

func nodeOf(ctx context.Context, c *client.Client) api.NodeID {
	info, err := c.GetNode(ctx)
	if err != nil {
		return api.NodeID{}
	}
	return info.NodeID
}

// readManifestEventually waits until a node has accepted the block holding
// the manifest (each node accepts on its own schedule).
func readManifestEventually(ctx context.Context, c *client.Client, bucket, key string) (*api.ManifestReply, error) {
	for {
		m, err := c.GetManifest(ctx, bucket, key)
		if err == nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("manifest %s/%s never appeared on %s: %w", bucket, key, c.URI(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
