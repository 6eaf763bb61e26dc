package benchmark

import (
	"context"
	"fmt"
	"time"
)

// CPUSource reads the CPU time a system's processes have used so far. The
// bench reads it around each steady round: CPU per request is what a
// feature costs independently of how busy the shared machine is, where
// requests per second on a saturated machine carry every other process's
// noise.
type CPUSource interface {
	CPUTime(ctx context.Context) (CPUReading, error)
}

// CPUReading is a system's CPU time so far and, for a blockchain, its
// accepted height (zero otherwise): per block is the unit a per-block
// feature (finality certificates) costs in.
type CPUReading struct {
	Used   time.Duration
	Height uint64
	// Consensus is the time the first node's accepted blocks spent from
	// issue to acceptance, summed over the Decided ones (blockchains
	// whose engine reports it; zero otherwise).
	Consensus time.Duration
	Decided   uint64
	// Txs is the transactions the first node accepted so far (zero
	// when the system has none).
	Txs uint64
}

// CPUUse is what a system's processes spent during its steady rounds.
type CPUUse struct {
	// Used is user plus system CPU time of the system's processes (S-Chain:
	// every node and its plugin) over the rounds, Wall the rounds' total
	// time and Requests the requests they answered.
	Used     time.Duration `json:"used_ns"`
	Wall     time.Duration `json:"wall_ns"`
	Requests int           `json:"requests"`
	// Blocks were accepted during the rounds (zero: not a blockchain).
	Blocks uint64 `json:"blocks,omitempty"`
	// Consensus is the time Decided blocks accepted on the first node
	// during the rounds spent there from issue to acceptance: whether a
	// feature makes requests wait longer because blocks take longer to
	// decide, or for another reason.
	Consensus time.Duration `json:"consensus_ns,omitempty"`
	Decided   uint64        `json:"decided,omitempty"`
	// Txs is the transactions accepted on the first node during the
	// rounds: with Requests, how many requests one signature carried.
	Txs uint64 `json:"txs,omitempty"`
}

// PerDecision is the mean time a block spent from issue to acceptance
// (zero without blocks).
func (u CPUUse) PerDecision() time.Duration {
	if u.Decided == 0 {
		return 0
	}
	return u.Consensus / time.Duration(u.Decided)
}

// PerBlock is the CPU time one accepted block cost, requests included
// (zero without blocks).
func (u CPUUse) PerBlock() time.Duration {
	if u.Blocks == 0 {
		return 0
	}
	return u.Used / time.Duration(u.Blocks)
}

// PerRequest is the CPU time one answered request cost (zero without
// requests).
func (u CPUUse) PerRequest() time.Duration {
	if u.Requests == 0 {
		return 0
	}
	return u.Used / time.Duration(u.Requests)
}

// Cores is how many cores the processes kept busy on average.
func (u CPUUse) Cores() float64 {
	if u.Wall <= 0 {
		return 0
	}
	return u.Used.Seconds() / u.Wall.Seconds()
}

// CPUTime implements CPUSource: the CPU time of every node process and
// its descendants (the VM plugins) that still run, and the first node's
// accepted height and consensus time.
func (c *SChainCluster) CPUTime(ctx context.Context) (CPUReading, error) {
	used, err := processTreeCPU(c.NodesAlone())
	if err != nil {
		return CPUReading{}, err
	}
	nd := c.net.Nodes()[0]
	m, err := scrapeNode(ctx, nd.URI+"/ext/metrics", c.net.ChainID().String())
	if err != nil {
		return CPUReading{}, fmt.Errorf("%s: %w", c.NodeName(nd.NodeID), err)
	}
	return CPUReading{Used: used, Height: m.finality.Blocks, Consensus: m.consensus, Decided: m.decided, Txs: m.txs}, nil
}

// Processes is a CPUSource over process trees: the CPU time roots and
// their living descendants used so far (every root must run).
type Processes []int

// CPUTime implements CPUSource.
func (p Processes) CPUTime(context.Context) (CPUReading, error) {
	used, err := processTreeCPU(p)
	return CPUReading{Used: used}, err
}

// ProcessesAlone is a CPUSource over processes without their descendants:
// the S-Chain nodes without their plugins, so that what the node
// (avalanchego) costs and what the VM costs read apart.
type ProcessesAlone []int

// CPUTime implements CPUSource.
func (p ProcessesAlone) CPUTime(context.Context) (CPUReading, error) {
	used, err := processCPU(p)
	return CPUReading{Used: used}, err
}

// NodesAlone is a CPUSource over c's node processes without their plugins.
func (c *SChainCluster) NodesAlone() ProcessesAlone {
	var pids ProcessesAlone
	for _, nd := range c.net.Nodes() {
		pids = append(pids, nd.PID)
	}
	return pids
}

// MachineCPU is a CPUSource over the whole machine: the CPU time its cores
// spent busy so far (neither idle nor waiting for I/O), whoever used it.
// Beside a system's own processes, it shows whether the machine had cores
// to spare.
type MachineCPU struct{}

// CPUTime implements CPUSource.
func (MachineCPU) CPUTime(context.Context) (CPUReading, error) {
	busy, err := machineBusy()
	return CPUReading{Used: busy}, err
}
