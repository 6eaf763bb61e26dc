package deploy

import (
	"context"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/operator/subnet"
)

// Chain is the part of a node's S-Chain API that status reads.
type Chain interface {
	GetNode(ctx context.Context) (*api.NodeReply, error)
	GetBlock(ctx context.Context, height uint64) (*api.BlockReply, error)
}

// NodeStatus is one validator of a deployment as status sees it.
type NodeStatus struct {
	URI    string     `json:"uri"`
	NodeID ids.NodeID `json:"nodeID"`
	// Validator: the P-chain lists it as a current validator of the subnet.
	Validator bool `json:"validator"`
	// Serves: the node runs the chain, bootstrapped.
	Serves    bool   `json:"serves"`
	Height    uint64 `json:"height"`
	StateRoot ids.ID `json:"stateRoot"`
	// Block is its accepted block at the common height.
	Block ids.ID `json:"block"`
	Err   string `json:"error,omitempty"`
}

// Status is every validator of a deployment: whether it serves the chain,
// and whether all agree on the block at the highest height all accepted.
type Status struct {
	SubnetID ids.ID `json:"subnetID"`
	ChainID  ids.ID `json:"chainID"`
	// Complete: every step of the record is committed.
	Complete bool         `json:"complete"`
	Nodes    []NodeStatus `json:"nodes"`
	// Height is the highest height every node accepted, Agree whether all
	// accepted the same block there (and so the same state root).
	Height uint64 `json:"commonHeight"`
	Agree  bool   `json:"agree"`
}

// OK reports whether the deployment is complete, every validator serves
// the chain and all agree.
func (s *Status) OK() bool {
	if !s.Complete || !s.Agree || len(s.Nodes) == 0 {
		return false
	}
	for _, n := range s.Nodes {
		if !n.Validator || !n.Serves || n.Err != "" {
			return false
		}
	}
	return true
}

// ReadStatus asks every node of the record. dial gives its avalanchego
// endpoint, chain its S-Chain API.
func ReadStatus(ctx context.Context, rec *Record, dial func(string) Endpoint, chain func(uri string) (Chain, error)) (*Status, error) {
	st := &Status{SubnetID: rec.SubnetID, ChainID: rec.ChainID, Complete: rec.Done()}
	var facts *subnet.Facts
	var lastErr error
	for _, n := range rec.Nodes {
		if f, err := subnet.Read(ctx, dial(n.URI), rec.SubnetID); err == nil {
			facts = f
			break
		} else {
			lastErr = err
		}
	}
	if facts == nil {
		return nil, fmt.Errorf("reading subnet %s from any of the record's nodes: %w", rec.SubnetID, lastErr)
	}
	chains := make([]Chain, len(rec.Nodes))
	for i, n := range rec.Nodes {
		ns := NodeStatus{URI: n.URI, NodeID: n.NodeID}
		_, ns.Validator = facts.Validator(n.NodeID)
		ns.Serves, _ = dial(n.URI).IsBootstrapped(ctx, rec.ChainID.String())
		c, err := chain(n.URI)
		if err == nil {
			var info *api.NodeReply
			if info, err = c.GetNode(ctx); err == nil {
				ns.Height, ns.StateRoot = info.Height, ids.ID(info.StateRoot)
				chains[i] = c
			}
		}
		if err != nil {
			ns.Err = err.Error()
		}
		st.Nodes = append(st.Nodes, ns)
	}
	st.Agree = true
	first := true
	for _, ns := range st.Nodes {
		if ns.Err != "" {
			st.Agree = false
			continue
		}
		if first || ns.Height < st.Height {
			st.Height, first = ns.Height, false
		}
	}
	if first {
		return st, nil
	}
	var block ids.ID
	for i := range st.Nodes {
		if chains[i] == nil {
			continue
		}
		b, err := chains[i].GetBlock(ctx, st.Height)
		if err != nil {
			st.Nodes[i].Err, st.Agree = fmt.Sprintf("getBlock(%d): %v", st.Height, err), false
			continue
		}
		st.Nodes[i].Block = ids.ID(b.ID)
		if block == ids.Empty {
			block = ids.ID(b.ID)
		} else if ids.ID(b.ID) != block {
			st.Agree = false
		}
	}
	return st, nil
}
