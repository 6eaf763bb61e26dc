package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s-chain/schain/api"
)

// StakeView is the caller's own view of the validators' weights: the
// P-chain set of the chain's subnet, read from a node the caller trusts
// (its own). Fresh reads count answers by these weights, never by weights
// the answering nodes report: a node's word on the stake would let one
// hostile node weigh as much as it claims.
type StakeView func(ctx context.Context) (map[api.NodeID]uint64, error)

// stake is the validators' weights fresh reads count.
type stake struct {
	weights map[api.NodeID]uint64
	total   uint64
	at      time.Time
}

func newStake(weights map[api.NodeID]uint64, at time.Time) (*stake, error) {
	s := &stake{weights: weights, at: at}
	for id, w := range weights {
		if s.total+w < s.total {
			return nil, fmt.Errorf("%w: the validators' weights overflow at %s", ErrMalformedResponse, id)
		}
		s.total += w
	}
	if s.total == 0 {
		return nil, fmt.Errorf("%w: the validator set has no weight", ErrNoQuorum)
	}
	return s, nil
}

// stakes caches the weights fresh reads count. It is safe for concurrent
// use.
type stakes struct {
	mu  sync.Mutex // guards cur
	cur *stake
}

// get returns the cached weights, read again when older than stakeTTL:
// from RouterConfig.Stake if the caller gave one, else from the validator
// set that more than 2/3 of the endpoints report alike (a hostile endpoint
// is one of them, not a third).
func (s *stakes) get(ctx context.Context, r *Router) (*stake, error) {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur != nil && time.Since(cur.at) < stakeTTL {
		return cur, nil
	}
	var (
		weights map[api.NodeID]uint64
		err     error
	)
	if r.cfg.Stake != nil {
		weights, err = r.cfg.Stake(ctx)
		if err != nil {
			err = fmt.Errorf("reading the validators' stake from the caller's P-chain view: %w", err)
		}
	} else {
		weights, err = reportedStake(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	n, err := newStake(weights, time.Now())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = n
	return n, nil
}

// reportedStake asks every endpoint for its membership view and returns
// the validator set (node IDs and weights) that more than 2/3 of the
// endpoints report alike, waiting freshGrace after the first answer.
func reportedStake(ctx context.Context, r *Router) (map[api.NodeID]uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type report struct {
		set map[api.NodeID]uint64
		err error
	}
	done := make(chan report, len(r.nodes))
	for _, e := range r.nodes {
		go func() {
			m, err := e.c.GetMembership(ctx)
			r.observe(e, err)
			if err != nil {
				done <- report{err: err}
				return
			}
			set := make(map[api.NodeID]uint64, len(m.Validators))
			for _, v := range m.Validators {
				set[v.NodeID] = v.Weight
			}
			done <- report{set: set}
		}()
	}
	var (
		errs  []error
		sets  = map[string]map[api.NodeID]uint64{}
		alike = map[string]int{}
		grace <-chan time.Time
	)
wait:
	for range r.nodes {
		select {
		case rep := <-done:
			if rep.err != nil {
				errs = append(errs, rep.err)
				continue
			}
			k := setKey(rep.set)
			sets[k] = rep.set
			alike[k]++
			if grace == nil {
				t := time.NewTimer(freshGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			break wait
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for k, n := range alike {
		if len(sets[k]) > 0 && 3*n > 2*len(r.nodes) {
			return sets[k], nil
		}
	}
	return nil, fmt.Errorf("%w: no validator set is reported alike by more than 2/3 of the %d endpoints (%d sets seen); give the client the caller's own P-chain view (RouterConfig.Stake, the CLI's --pchain): %w",
		ErrNoQuorum, len(r.nodes), len(sets), errors.Join(errs...))
}

// setKey is a canonical text of a validator set.
func setKey(set map[api.NodeID]uint64) string {
	var b strings.Builder
	for _, id := range sortedIDs(set) {
		fmt.Fprintf(&b, "%s=%d;", id, set[id])
	}
	return b.String()
}

// PChainStake is a StakeView read from the P-chain API of the avalanchego
// node at nodeURI (scheme, host and port: "http://127.0.0.1:9650"): the
// current validators of the subnet that validates chainID (an ID, or an
// alias the node resolves). hc nil means a client with a 10 s timeout. It
// uses only the node's public JSON-RPC (info.getBlockchainID for an alias,
// platform.validatedBy, platform.getCurrentValidators).
func PChainStake(nodeURI, chainID string, hc *http.Client) StakeView {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	base := strings.TrimSuffix(nodeURI, "/")
	endpoint := base + "/ext/P"
	return func(ctx context.Context) (map[api.NodeID]uint64, error) {
		blockchainID := chainID
		if _, err := api.ParseID(chainID); err != nil {
			var alias struct {
				BlockchainID string `json:"blockchainID"`
			}
			if err := pchainCall(ctx, hc, base+"/ext/info", "info.getBlockchainID", map[string]string{"alias": chainID}, &alias); err != nil {
				return nil, err
			}
			blockchainID = alias.BlockchainID
		}
		var subnet struct {
			SubnetID string `json:"subnetID"`
		}
		if err := pchainCall(ctx, hc, endpoint, "platform.validatedBy", map[string]string{"blockchainID": blockchainID}, &subnet); err != nil {
			return nil, err
		}
		var current struct {
			Validators []struct {
				NodeID api.NodeID `json:"nodeID"`
				Weight string     `json:"weight"`
			} `json:"validators"`
		}
		if err := pchainCall(ctx, hc, endpoint, "platform.getCurrentValidators", map[string]string{"subnetID": subnet.SubnetID}, &current); err != nil {
			return nil, err
		}
		weights := make(map[api.NodeID]uint64, len(current.Validators))
		for _, v := range current.Validators {
			w, err := strconv.ParseUint(v.Weight, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s's weight %q from %s", ErrMalformedResponse, v.NodeID, v.Weight, endpoint)
			}
			weights[v.NodeID] += w
		}
		return weights, nil
	}
}

// pchainCall makes one JSON-RPC 2.0 call to a node's API.
func pchainCall(ctx context.Context, hc *http.Client, endpoint, method string, params, result any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s at %s: %w", ErrTransport, method, endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%w: %s at %s: %w", ErrTransport, method, endpoint, err)
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("%w: %s at %s (HTTP %d): %w", ErrMalformedResponse, method, endpoint, resp.StatusCode, err)
	}
	if out.Error != nil {
		return fmt.Errorf("%s at %s: %s", method, endpoint, out.Error.Message)
	}
	return json.Unmarshal(out.Result, result)
}

// sortedIDs lists m's node IDs in byte order.
func sortedIDs[V any](m map[api.NodeID]V) []api.NodeID {
	return slices.SortedFunc(maps.Keys(m), func(a, b api.NodeID) int { return bytes.Compare(a[:], b[:]) })
}
