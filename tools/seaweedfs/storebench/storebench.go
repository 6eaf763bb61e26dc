// Package storebench measures SeaweedFS's S3 gateway on several filer
// stores of one cluster in one run: the S-Chain store, stock leveldb2 (one
// filer) and etcd (three members), each behind its own gateway.
//
//   - PUT rounds: closed-loop clients PUT objects of one size, each under a
//     key of its own, for a round's length; stores take turns (A B C, C B
//     A, ...), so that drift of the shared machine weighs each the same:
//     PUTs/s and latency percentiles, from the client.
//   - GET rounds: the same clients GET objects the PUT rounds wrote.
//   - CPU: around each PUT round the bench reads what each store's own
//     processes, the processes every store shares (the validators, the
//     master and volume server) and the whole machine used, so that a
//     store's throughput comes with what each PUT cost and whether the
//     machine had cores to spare.
//   - Conditional PUTs (stores shared by two filers): in each trial four
//     exclusive creates (If-None-Match: *) of one new key, two through each
//     of the store's gateways, race; a trial where more than one succeeds
//     is a double commit, the design's first invariant broken.
//
// The statistics are package benchmark's; the S3 requests objload's.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package storebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/seaweedfs/objload"
)

// Settings shape the bench.
type Settings struct {
	Clients       int           `json:"clients"`
	Rounds        int           `json:"rounds"`
	RoundDuration time.Duration `json:"round_duration_ns"`
	ObjectSize    int           `json:"object_size"`
	// Trials of the conditional PUTs per shared store.
	Trials  int           `json:"trials"`
	Timeout time.Duration `json:"request_timeout_ns"`
}

// DefaultSettings fit `make bench-weed` on 2 cores.
func DefaultSettings() Settings {
	return Settings{Clients: 16, Rounds: 2, RoundDuration: 10 * time.Second, ObjectSize: 4096, Trials: 20, Timeout: 30 * time.Second}
}

// Store is one filer store behind its S3 gateways.
type Store struct {
	Name string
	// Gateways are the S3 endpoints (host:port) on the store's filers: the
	// first takes the load, the conditional PUTs race through the first two.
	Gateways []string
	Bucket   string
	// CPU reads what the store's own processes (its filers, gateways and
	// servers) used; nil: not measured.
	CPU benchmark.CPUSource
}

// Group is a set of processes the stores share (the validators, the
// master and volume server, the machine as a whole), measured during
// every store's PUT rounds.
type Group struct {
	Name string
	CPU  benchmark.CPUSource
	// PartOf names the group this one is a part of (the validators' nodes
	// without their plugins, of the validators): reported beside it, not
	// added to a store's total.
	PartOf string
}

// Group names in a Result's PutCPU: a store's own processes, and the
// whole machine (which the bench's caller passes as a shared group).
const (
	ownGroup     = "own processes"
	machineGroup = "machine"
)

// Machine is the shared group of the whole machine's busy time.
func Machine() Group { return Group{Name: machineGroup, CPU: benchmark.MachineCPU{}} }

// Report is the bench's result.
type Report struct {
	Settings Settings `json:"settings"`
	Stores   []Result `json:"stores"`
	// Machine is where it ran.
	Machine benchmark.Machine `json:"machine"`
}

// Result is one store's numbers.
type Result struct {
	Name string `json:"name"`
	// Put and Get pool every round's samples; the rates are the medians of
	// the rounds'.
	Put         benchmark.Summary `json:"put"`
	Get         benchmark.Summary `json:"get"`
	PutPerSec   float64           `json:"put_per_sec"`
	GetPerSec   float64           `json:"get_per_sec"`
	Conditional *Conditional      `json:"conditional,omitempty"`
	// PutCPU is what the store's own processes and each shared group used
	// during its PUT rounds (Requests: the PUTs answered).
	PutCPU      []GroupCPU `json:"put_cpu,omitempty"`
	PutFailures []string   `json:"put_failures,omitempty"`
	GetFailures []string   `json:"get_failures,omitempty"`
	written     []string
	putSamples  [][]benchmark.Sample
	getSamples  [][]benchmark.Sample
	putElapsed  []time.Duration
	getElapsed  []time.Duration
}

// GroupCPU is what one group of processes used during a store's rounds.
type GroupCPU struct {
	Group  string           `json:"group"`
	PartOf string           `json:"part_of,omitempty"`
	Use    benchmark.CPUUse `json:"use"`
}

// Conditional is one shared store's race of exclusive creates.
type Conditional struct {
	Trials int `json:"trials"`
	// DoubleCommits are trials in which more than one create succeeded;
	// NoCommit those in which none did.
	DoubleCommits int      `json:"double_commits"`
	NoCommit      int      `json:"no_commit"`
	Errors        []string `json:"errors,omitempty"`
}

// Run measures stores and returns the report.
func Run(ctx context.Context, stores []Store, shared []Group, s Settings, progress io.Writer) (*Report, error) {
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(progress, "[%6s] "+format+"\n", append([]any{time.Since(began).Round(time.Second)}, args...)...)
	}
	rep := &Report{Settings: s, Stores: make([]Result, len(stores)), Machine: benchmark.DescribeMachine()}
	gateways := make([][]*objload.HTTPStore, len(stores))
	for i, st := range stores {
		rep.Stores[i].Name = st.Name
		for _, g := range st.Gateways {
			gateways[i] = append(gateways[i], objload.NewHTTPStore("http://"+g+"/"+st.Bucket))
		}
		if err := objload.CreateBucket(ctx, st.Gateways[0], st.Bucket); err != nil {
			return nil, fmt.Errorf("%s: %w", st.Name, err)
		}
		// A first object, so that every store has grown its volumes.
		if err := gateways[i][0].Put(ctx, "warm-up", make([]byte, s.ObjectSize)); err != nil {
			return nil, fmt.Errorf("%s: warm-up: %w", st.Name, err)
		}
	}
	for _, get := range []bool{false, true} {
		for k, slot := range benchmark.Schedule(len(stores), s.Rounds) {
			res := &rep.Stores[slot.System]
			what := "PUT"
			if get {
				what = "GET"
			}
			logf("%s round %d/%d (%d of %d): %s for %v", what, slot.Round+1, s.Rounds, k+1, len(stores)*s.Rounds, res.Name, s.RoundDuration)
			groups := shared
			if c := stores[slot.System].CPU; c != nil {
				groups = append([]Group{{Name: ownGroup, CPU: c}}, shared...)
			}
			var before []benchmark.CPUReading
			if !get {
				var err error
				if before, err = readCPU(ctx, groups); err != nil {
					return nil, fmt.Errorf("%s: %w", res.Name, err)
				}
			}
			t0, puts := time.Now(), len(res.written)
			if err := round(ctx, gateways[slot.System][0], res, slot.Round, get, s); err != nil {
				return nil, err
			}
			if !get {
				wall := time.Since(t0)
				after, err := readCPU(ctx, groups)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", res.Name, err)
				}
				res.addCPU(groups, before, after, wall, len(res.written)-puts)
			}
		}
	}
	for i, st := range stores {
		res := &rep.Stores[i]
		res.Put, res.PutPerSec = pool(res.putSamples, res.putElapsed)
		res.Get, res.GetPerSec = pool(res.getSamples, res.getElapsed)
		if len(st.Gateways) >= 2 {
			logf("conditional PUTs on %s: %d trials of 4 racing exclusive creates", st.Name, s.Trials)
			res.Conditional = race(ctx, gateways[i][:2], s)
		}
	}
	return rep, nil
}

// round runs one PUT (or GET) round of closed-loop clients on g.
func round(ctx context.Context, g *objload.HTTPStore, res *Result, n int, get bool, s Settings) error {
	ctx, cancel := context.WithTimeout(ctx, s.RoundDuration)
	defer cancel()
	t0 := time.Now()
	var (
		mu      sync.Mutex
		samples []benchmark.Sample
		written []string
		failed  []string
		wg      sync.WaitGroup
	)
	keys := res.written
	if get && len(keys) == 0 {
		return fmt.Errorf("%s: no object to read", res.Name)
	}
	for c := range s.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := make([]byte, s.ObjectSize)
			rng := rand.New(rand.NewPCG(uint64(n), uint64(c)))
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("r%d/c%02d/%06d", n, c, i)
				if get {
					key = keys[rng.IntN(len(keys))]
				}
				rctx, rcancel := context.WithTimeout(context.Background(), s.Timeout)
				start := time.Since(t0)
				var err error
				if get {
					_, err = g.Get(rctx, key)
				} else {
					binaryKey(body, n, c, i)
					err = g.Put(rctx, key, body)
				}
				end := time.Since(t0)
				rcancel()
				mu.Lock()
				samples = append(samples, benchmark.Sample{Start: start, End: end, Count: 1, Failed: err != nil})
				switch {
				case err != nil && len(failed) < 5:
					failed = append(failed, err.Error())
				case err == nil && !get:
					written = append(written, key)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if get {
		res.getSamples, res.getElapsed = append(res.getSamples, samples), append(res.getElapsed, elapsed)
		res.GetFailures = append(res.GetFailures, failed...)
	} else {
		res.putSamples, res.putElapsed = append(res.putSamples, samples), append(res.putElapsed, elapsed)
		res.PutFailures = append(res.PutFailures, failed...)
		res.written = append(res.written, written...)
	}
	return nil
}

// readCPU reads every group's CPU time so far.
func readCPU(ctx context.Context, groups []Group) ([]benchmark.CPUReading, error) {
	out := make([]benchmark.CPUReading, len(groups))
	for i, g := range groups {
		r, err := g.CPU.CPUTime(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the CPU time of %s: %w", g.Name, err)
		}
		out[i] = r
	}
	return out, nil
}

// addCPU adds one PUT round's use by every group to the store's.
func (res *Result) addCPU(groups []Group, before, after []benchmark.CPUReading, wall time.Duration, puts int) {
	for i, g := range groups {
		var use *benchmark.CPUUse
		for j := range res.PutCPU {
			if res.PutCPU[j].Group == g.Name {
				use = &res.PutCPU[j].Use
			}
		}
		if use == nil {
			res.PutCPU = append(res.PutCPU, GroupCPU{Group: g.Name, PartOf: g.PartOf})
			use = &res.PutCPU[len(res.PutCPU)-1].Use
		}
		use.Used += after[i].Used - before[i].Used
		use.Wall += wall
		use.Requests += puts
		use.Blocks += after[i].Height - before[i].Height
		use.Txs += after[i].Txs - before[i].Txs
	}
}

// binaryKey makes each object's first bytes its own, so no two are equal.
func binaryKey(body []byte, round, client, i int) {
	copy(body, fmt.Sprintf("%d/%d/%d/", round, client, i))
}

// pool summarizes every round's samples together; the rate is the median
// of the rounds' rates.
func pool(rounds [][]benchmark.Sample, elapsed []time.Duration) (benchmark.Summary, float64) {
	var all []benchmark.Sample
	var total time.Duration
	var rates []float64
	for i, r := range rounds {
		// Offsets are per round: shift them so one elapsed covers all.
		for _, x := range r {
			x.Start, x.End = x.Start+total, x.End+total
			all = append(all, x)
		}
		rates = append(rates, benchmark.Summarize(r, elapsed[i]).ReqPerSec)
		total += elapsed[i]
	}
	return benchmark.Summarize(all, total), benchmark.Median(rates)
}

// race runs the conditional trials: four exclusive creates of one new key,
// two through each gateway.
func race(ctx context.Context, gateways []*objload.HTTPStore, s Settings) *Conditional {
	c := &Conditional{Trials: s.Trials}
	for trial := range s.Trials {
		key := fmt.Sprintf("race/%d-%d", time.Now().UnixNano(), trial)
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, s.Timeout)
				defer cancel()
				err := gateways[w%2].PutIfAbsent(rctx, key, []byte(fmt.Sprintf("writer %d", w)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, objload.ErrPreconditionFailed) && len(c.Errors) < 5:
					c.Errors = append(c.Errors, err.Error())
				}
			}()
		}
		wg.Wait()
		switch {
		case wins > 1:
			c.DoubleCommits++
		case wins == 0:
			c.NoCommit++
		}
	}
	return c
}
