// Package cutover moves a SeaweedFS cluster's allocation to S-Chain and
// back without any id issued twice.
//
// Cutover: every S-Chain file key and volume id must be above every legacy
// one. The legacy bounds come from the cluster's own state (each volume
// server's highest file key per volume, the masters' max volume id) and from
// the shadow's evidence (the highest key the stock sequencer handed out,
// written or not); the floors, bound + 1 + margin, are recorded on S-Chain
// as the counters of <prefix>/floor/keys and <prefix>/floor/volumes, which
// every schain-mode reservation passes as its floor. Counters only move up,
// so a floor recorded once can only be raised.
//
// Rollback: the stock sequencer must start above every S-Chain id. The
// bounds are S-Chain's counters (every key range of every volume id S-Chain
// could have issued, and the volume range): committed reservations count,
// whether handed out or not. They become the stock master's file_key_floor
// and volume_id_floor.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package cutover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/seaweedfs/schainseq"
)

// Bounds are the highest ids a side issued, and where they were seen.
type Bounds struct {
	MaxFileKey  uint64   `json:"max_file_key"`
	MaxVolumeID uint64   `json:"max_volume_id"`
	Sources     []string `json:"sources"`
}

// Raise merges o into b.
func (b *Bounds) Raise(o Bounds) {
	b.MaxFileKey = max(b.MaxFileKey, o.MaxFileKey)
	b.MaxVolumeID = max(b.MaxVolumeID, o.MaxVolumeID)
	b.Sources = append(b.Sources, o.Sources...)
}

// Floors are the smallest ids the next allocator may issue.
type Floors struct {
	FileKey  uint64 `json:"file_key"`
	VolumeID uint64 `json:"volume_id"`
}

// Margins are added above the bounds: ids the legacy may issue between the
// reading and its stop (or that no source showed).
type Margins struct {
	FileKey  uint64 `json:"file_key"`
	VolumeID uint64 `json:"volume_id"`
}

// DefaultMargins leave a million file keys and 16 volume ids.
func DefaultMargins() Margins { return Margins{FileKey: 1_000_000, VolumeID: 16} }

// Plan is bounds + 1 + margins, saturating.
func Plan(b Bounds, m Margins) Floors {
	return Floors{FileKey: above(b.MaxFileKey, m.FileKey), VolumeID: above(b.MaxVolumeID, m.VolumeID)}
}

func above(x, margin uint64) uint64 {
	if x > math.MaxUint64-1-margin {
		return math.MaxUint64
	}
	return x + 1 + margin
}

var errVolumeIDTooLarge = errors.New("volume id floor does not fit SeaweedFS's 32-bit volume ids")

// FromCluster reads the legacy bounds from the cluster's own state: the
// masters' max volume id (/cluster/status), the leader's topology
// (/dir/status: volume ids and volume servers) and each volume server's
// highest file key per volume (/status MaxFileKeys, served by the patched
// volume server). A volume server without MaxFileKeys (stock) is an error:
// its keys would be unknown.
func FromCluster(ctx context.Context, masters []string) (Bounds, error) {
	b := Bounds{}
	var leader string
	for _, m := range masters {
		var st struct {
			IsLeader    bool   `json:"IsLeader"`
			Leader      string `json:"Leader"`
			MaxVolumeID uint64 `json:"MaxVolumeId"`
		}
		if err := getJSON(ctx, "http://"+m+"/cluster/status", &st); err != nil {
			b.Sources = append(b.Sources, fmt.Sprintf("master %s: unreachable (%v)", m, err))
			continue
		}
		b.MaxVolumeID = max(b.MaxVolumeID, st.MaxVolumeID)
		b.Sources = append(b.Sources, fmt.Sprintf("master %s: max volume id %d", m, st.MaxVolumeID))
		if st.IsLeader {
			leader = m
		}
	}
	if leader == "" {
		return b, fmt.Errorf("no master is the leader (the cluster's topology is read from the leader): %s", strings.Join(b.Sources, "; "))
	}
	var dir struct {
		Topology topology `json:"Topology"`
	}
	if err := getJSON(ctx, "http://"+leader+"/dir/status", &dir); err != nil {
		return b, fmt.Errorf("reading the topology from %s: %w", leader, err)
	}
	servers := dir.Topology.servers()
	if len(servers) == 0 {
		b.Sources = append(b.Sources, "topology: no volume server registered")
		return b, nil
	}
	vb, err := FromVolumeServers(ctx, servers)
	b.Raise(vb)
	return b, err
}

// FromVolumeServers reads each volume server's volumes and highest file key
// per volume (/status MaxFileKeys, served by the patched volume server). A
// volume server without MaxFileKeys (stock) is an error: its keys would be
// unknown.
func FromVolumeServers(ctx context.Context, servers []string) (Bounds, error) {
	var b Bounds
	for _, vs := range servers {
		var st struct {
			Volumes []struct {
				ID uint64 `json:"Id"`
			} `json:"Volumes"`
			MaxFileKeys map[string]uint64 `json:"MaxFileKeys"`
		}
		if err := getJSON(ctx, "http://"+vs+"/status", &st); err != nil {
			return b, fmt.Errorf("reading volume server %s: %w", vs, err)
		}
		if st.MaxFileKeys == nil {
			return b, fmt.Errorf("volume server %s reports no MaxFileKeys: run the patched weed (make weed) or cut over from the shadow's pairs", vs)
		}
		var key, vid uint64
		for _, v := range st.Volumes {
			vid = max(vid, v.ID)
		}
		for _, k := range st.MaxFileKeys {
			key = max(key, k)
		}
		b.MaxFileKey = max(b.MaxFileKey, key)
		b.MaxVolumeID = max(b.MaxVolumeID, vid)
		b.Sources = append(b.Sources, fmt.Sprintf("volume server %s: %d volumes, max volume id %d, max file key %d", vs, len(st.Volumes), vid, key))
	}
	return b, nil
}

// topology is the part of /dir/status naming the volume servers.
type topology struct {
	DataCenters []struct {
		Racks []struct {
			DataNodes []struct {
				URL string `json:"Url"`
			} `json:"DataNodes"`
		} `json:"Racks"`
	} `json:"DataCenters"`
}

func (t topology) servers() []string {
	var out []string
	for _, dc := range t.DataCenters {
		for _, r := range dc.Racks {
			for _, dn := range r.DataNodes {
				out = append(out, dn.URL)
			}
		}
	}
	return out
}

// Chain is the S-Chain API the cutover needs: writes at the owner, and
// fresh reads (client.Fresh), never one node's word. A node that lags
// answers old counters, and a bound read low lets the next allocator issue
// ids a second time. Every read asks for state at least as new as the
// newest last accepted block of nodes holding more than 2/3 of the stake,
// and takes the largest counter among such nodes.
type Chain interface {
	Allocate(ctx context.Context, args api.AllocateArgs) (*api.AllocateReply, error)
	Newest(ctx context.Context) (api.Head, error)
	GetAllocationAt(ctx context.Context, rangeKey string, minHeight uint64) (*api.AllocationReply, error)
}

var _ Chain = client.Fresh{}

// Record raises the floor ranges of prefix on S-Chain so that their next ids
// are at least f, and returns the floors in force (higher if an earlier
// cutover recorded more: floors never go down).
func Record(ctx context.Context, c Chain, prefix string, f Floors) (Floors, error) {
	if f.VolumeID > math.MaxUint32 {
		return Floors{}, fmt.Errorf("%w: %d", errVolumeIDTooLarge, f.VolumeID)
	}
	head, err := c.Newest(ctx)
	if err != nil {
		return Floors{}, err
	}
	var got Floors
	for _, x := range []struct {
		rng  string
		want uint64
		out  *uint64
	}{{schainseq.KeyFloorRange(prefix), f.FileKey, &got.FileKey}, {schainseq.VolumeFloorRange(prefix), f.VolumeID, &got.VolumeID}} {
		cur, err := c.GetAllocationAt(ctx, x.rng, head.AcceptedHeight)
		if err != nil {
			return Floors{}, fmt.Errorf("reading %s: %w", x.rng, err)
		}
		next := cur.Next
		if next < max(x.want, 1) {
			// One id at floor want-1 moves the counter to want (or above).
			rep, err := c.Allocate(ctx, api.AllocateArgs{Range: x.rng, Count: 1, Floor: max(x.want, 1) - 1, Wait: api.WaitAccepted, OwnEntry: true})
			if err != nil {
				return Floors{}, fmt.Errorf("recording %s >= %d: %w", x.rng, x.want, err)
			}
			// The receipt says where the counter is: another node's read
			// may lag a block behind.
			rc := rep.Receipt
			var e api.ReceiptEntry
			ok := rc != nil && rc.Status == api.StatusAccepted
			if ok {
				e, ok = rc.Entry(rep.Index)
			}
			if !ok {
				return Floors{}, fmt.Errorf("recording %s >= %d: transaction %s not accepted: %+v", x.rng, x.want, rep.TxID, rc)
			}
			next = max(next, e.Base+e.Count)
		}
		if next < x.want {
			return Floors{}, fmt.Errorf("%s is %d after recording %d", x.rng, next, x.want)
		}
		*x.out = next
	}
	return got, nil
}

// Recorded reads the floors in force (zero: no cutover yet).
func Recorded(ctx context.Context, c Chain, prefix string) (Floors, error) {
	head, err := c.Newest(ctx)
	if err != nil {
		return Floors{}, err
	}
	return recordedAt(ctx, c, prefix, head.AcceptedHeight)
}

func recordedAt(ctx context.Context, c Chain, prefix string, minHeight uint64) (Floors, error) {
	k, err := c.GetAllocationAt(ctx, schainseq.KeyFloorRange(prefix), minHeight)
	if err != nil {
		return Floors{}, err
	}
	v, err := c.GetAllocationAt(ctx, schainseq.VolumeFloorRange(prefix), minHeight)
	if err != nil {
		return Floors{}, err
	}
	return Floors{FileKey: k.Next, VolumeID: v.Next}, nil
}

// SChainBounds reads every id S-Chain could have given the cluster: the
// next id of the volume range and of the key range of every volume id below
// it (and of the cutover floors). Each next id is one above the highest
// reserved, so the result's Max* are next-1. Every read is at least as new
// as the newest last accepted block when it starts (Chain).
func SChainBounds(ctx context.Context, c Chain, prefix string, band uint32, progress func(done, total int)) (Bounds, error) {
	head, err := c.Newest(ctx)
	if err != nil {
		return Bounds{}, err
	}
	vol, err := c.GetAllocationAt(ctx, schainseq.VolumeRange(prefix), head.AcceptedHeight)
	if err != nil {
		return Bounds{}, err
	}
	floors, err := recordedAt(ctx, c, prefix, head.AcceptedHeight)
	if err != nil {
		return Bounds{}, err
	}
	volNext := max(vol.Next, floors.VolumeID)
	b := Bounds{MaxVolumeID: sub1(volNext), MaxFileKey: sub1(floors.FileKey)}
	b.Sources = append(b.Sources, fmt.Sprintf("%s next %d, cutover floors %d (keys) and %d (volumes), at S-Chain height %d or above",
		schainseq.VolumeRange(prefix), vol.Next, floors.FileKey, floors.VolumeID, head.AcceptedHeight))
	ranges := map[string]bool{}
	for v := uint64(0); v < volNext; v++ {
		ranges[schainseq.KeyRange(prefix, uint32(v), band)] = true
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		done     int
		keyMax   uint64
		jobs     = make(chan string)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rng := range jobs {
				a, err := c.GetAllocationAt(ctx, rng, head.AcceptedHeight)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("reading %s: %w", rng, err)
				}
				if err == nil {
					keyMax = max(keyMax, sub1(a.Next))
				}
				done++
				if progress != nil && (done%100 == 0 || done == len(ranges)) {
					progress(done, len(ranges))
				}
				mu.Unlock()
			}
		}()
	}
	for rng := range ranges {
		jobs <- rng
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return Bounds{}, firstErr
	}
	b.MaxFileKey = max(b.MaxFileKey, keyMax)
	b.Sources = append(b.Sources, fmt.Sprintf("%d key ranges: highest reserved key %d", len(ranges), keyMax))
	return b, nil
}

func sub1(x uint64) uint64 {
	if x == 0 {
		return 0
	}
	return x - 1
}

// RollbackSequencer is the [master.sequencer] table of a rollback to the
// stock sequencer above every S-Chain id.
func RollbackSequencer(f Floors) map[string]string {
	return map[string]string{
		"file_key_floor":  strconv.FormatUint(f.FileKey, 10),
		"volume_id_floor": strconv.FormatUint(min(f.VolumeID, math.MaxUint32), 10),
	}
}

func getJSON(ctx context.Context, url string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := seaweed.Get(ctx, url)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

// FromShadowReport reads the legacy bounds a shadow comparison wrote to
// dir: seaweedfs.json of `schain seaweedfs shadow` (the stock sequencer's
// highest key, dropped mirrors included, and highest volume id), or else
// report.json's highest legacy id (`schain shadow run`: keys only).
func FromShadowReport(dir string) (Bounds, error) {
	var weed struct {
		LegacyMaxKey uint64 `json:"legacy_max_key"`
		LegacyMaxVol uint64 `json:"legacy_max_volume_id"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "seaweedfs.json")); err == nil {
		if err := json.Unmarshal(b, &weed); err != nil {
			return Bounds{}, fmt.Errorf("%s: %w", filepath.Join(dir, "seaweedfs.json"), err)
		}
		return Bounds{MaxFileKey: weed.LegacyMaxKey, MaxVolumeID: weed.LegacyMaxVol,
			Sources: []string{fmt.Sprintf("shadow report %s: max key %d, max volume id %d", dir, weed.LegacyMaxKey, weed.LegacyMaxVol)}}, nil
	}
	var rep struct {
		Report struct {
			Tracking struct {
				LegacyMaxID uint64 `json:"legacy_max_id"`
			} `json:"tracking"`
		} `json:"report"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return Bounds{}, fmt.Errorf("no shadow report in %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return Bounds{}, fmt.Errorf("%s: %w", filepath.Join(dir, "report.json"), err)
	}
	return Bounds{MaxFileKey: rep.Report.Tracking.LegacyMaxID,
		Sources: []string{fmt.Sprintf("shadow report %s: max legacy id %d (no volume ids)", dir, rep.Report.Tracking.LegacyMaxID)}}, nil
}
