package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/s-chain/schain/operator/shadow/seaweed"
)

// httpClient asks the leader to grow volumes (seaweed.Get reads statuses).
var httpClient = &http.Client{Timeout: 10 * time.Second}

// Volumes lists the volume ids the leader's topology knows, sorted.
func (c *Cluster) Volumes(ctx context.Context) ([]uint32, error) {
	leader, err := c.Leader(ctx)
	if err != nil {
		return nil, err
	}
	body, err := seaweed.Get(ctx, "http://"+leader+"/vol/status")
	if err != nil {
		return nil, err
	}
	var st struct {
		Volumes struct {
			DataCenters map[string]map[string]map[string][]struct {
				ID uint32 `json:"Id"`
			} `json:"DataCenters"`
		} `json:"Volumes"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("/vol/status of %s: %w", leader, err)
	}
	var out []uint32
	for _, racks := range st.Volumes.DataCenters {
		for _, nodes := range racks {
			for _, vols := range nodes {
				for _, v := range vols {
					out = append(out, v.ID)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Grow asks the leader for n more volumes of collection (replication 000)
// and returns once they are created.
func (c *Cluster) Grow(ctx context.Context, collection string, n int) error {
	leader, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	q := url.Values{"count": {strconv.Itoa(n)}, "collection": {collection}, "replication": {"000"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+leader+"/vol/grow?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ans struct {
		Count int    `json:"count"`
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	if resp.StatusCode != http.StatusOK || ans.Error != "" {
		return fmt.Errorf("growing %d volumes of %s: HTTP %d: %s", n, collection, resp.StatusCode, ans.Error)
	}
	if ans.Count < n {
		return fmt.Errorf("growing %d volumes of %s: %d grown", n, collection, ans.Count)
	}
	return nil
}
