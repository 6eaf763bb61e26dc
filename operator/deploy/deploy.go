// Package deploy creates S-Chain on an avalanchego network it did not
// start: given the nodes that will validate it, the key of a funded
// P-chain address and the genesis, it checks every node (same network,
// bootstrapped, the plugin installed, a primary-network validator),
// creates a permissioned subnet owned by the key, adds each node as a
// validator, and creates the chain.
//
// Every transaction is built and signed before the first one is issued,
// each spending the change of the one before, and kept in the deployment
// record (a JSON file) with its state. The subnet and chain IDs are the IDs
// of their transactions, so they are known from the first run, and a
// second run issues the recorded bytes again instead of building new ones:
// it resumes where the first stopped and never creates a second subnet. A
// step is marked issued in the record before it is sent, so that a crash
// between sending and recording still finds it (platform.getTxStatus).
//
// Between the subnet and the chain the nodes must track the subnet
// (--track-subnets, a restart), and should have the chain config in place
// (its path names the chain ID): the run stops there with the lines each
// node lacks until its peers report it tracking the subnet, and the next
// run creates the chain.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/platformvm/fx"
	"github.com/ava-labs/avalanchego/vms/platformvm/status"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/s-chain/schain/operator/subnet"
	vmconfig "github.com/s-chain/schain/vm/config"
)

// DefaultWeight is each validator's weight unless given: equal weights, as
// on the local network (tmpnet's subnet validators weigh the same).
const DefaultWeight = units.Schmeckle

// DefaultChainName names the chain in its CreateChainTx.
const DefaultChainName = "schain"

var (
	// ErrPending: the deployment waits for the operator (the nodes must
	// track the subnet, or run the chain); the result lists what to do, and
	// a second run resumes.
	ErrPending = errors.New("deploy: waiting for the nodes")
	// ErrSpec: the deployment asked for is incomplete or invalid.
	ErrSpec = errors.New("deploy: invalid deployment")
)

// DefaultGenesis is the genesis of a chain starting at now with every
// default of vm/config (docs/operating/configuration.md) and every change of
// execution this code knows active from the first block.
func DefaultGenesis(now time.Time) []byte {
	upgrades, err := json.Marshal(vmconfig.UpgradesAtGenesis())
	if err != nil {
		panic(fmt.Sprintf("deploy: encoding the upgrades: %v", err))
	}
	return fmt.Appendf(nil, `{"timestamp": %d, "upgrades": %s}`, now.UnixMilli(), upgrades)
}

// Spec is the deployment asked for.
type Spec struct {
	// Nodes are the URIs (http://host:port) of the nodes that will validate
	// the subnet, each running avalanchego with the plugin installed.
	Nodes []string
	// PChain is the node the transactions are issued to (default Nodes[0]).
	PChain string
	// Key pays the fees and owns the subnet; KeyPath is its file, kept in
	// the record (never the key) for `schain validators`.
	Key     *secp256k1.PrivateKey
	KeyPath string
	// Genesis is the chain's genesis (checked by vm/config). Empty: the
	// record's when resuming, else DefaultGenesis starting now.
	Genesis   []byte
	ChainName string
	// Weight is each validator's weight (zero: DefaultWeight).
	Weight uint64
	VMID   ids.ID
	// RecordPath is the deployment record file.
	RecordPath string
	// TrackWait is how long to wait for every node to track the subnet
	// before creating the chain (zero: look once, and stop with the lines
	// to add if one does not).
	TrackWait time.Duration
	// ServeWait is how long to wait, once the chain is created, until
	// every node runs it.
	ServeWait time.Duration
	// PollEvery is how often the P-chain and the nodes are asked again
	// (zero: 200 ms).
	PollEvery time.Duration
	// PluginDir and ChainConfigDir are where the nodes keep plugins and
	// chain configs, for the lines printed (defaults: avalanchego's).
	PluginDir      string
	ChainConfigDir string
	// Progress receives a line per step.
	Progress io.Writer
}

func (s *Spec) fill() error {
	switch {
	case len(s.Nodes) == 0:
		return fmt.Errorf("%w: no node given (hint: --node http://host:9650, once per validator)", ErrSpec)
	case s.Key == nil:
		return fmt.Errorf("%w: no key (hint: --key-file, a funded P-chain key that will own the subnet)", ErrSpec)
	case s.RecordPath == "":
		return fmt.Errorf("%w: no record file", ErrSpec)
	case s.VMID == ids.Empty:
		return fmt.Errorf("%w: no VM ID", ErrSpec)
	}
	if len(s.Genesis) > 0 {
		if _, err := vmconfig.ParseGenesis(s.Genesis); err != nil {
			return fmt.Errorf("%w: %w", ErrSpec, err)
		}
	}
	if s.PChain == "" {
		s.PChain = s.Nodes[0]
	}
	if s.ChainName == "" {
		s.ChainName = DefaultChainName
	}
	if s.Weight == 0 {
		s.Weight = DefaultWeight
	}
	if s.PollEvery <= 0 {
		s.PollEvery = 200 * time.Millisecond
	}
	if s.PluginDir == "" {
		s.PluginDir = "~/.avalanchego/plugins"
	}
	if s.ChainConfigDir == "" {
		s.ChainConfigDir = "~/.avalanchego/configs/chains"
	}
	if s.Progress == nil {
		s.Progress = io.Discard
	}
	return nil
}

func (s *Spec) genesisDigest() string {
	sum := sha256.Sum256(s.Genesis)
	return hex.EncodeToString(sum[:])
}

// Deployer runs one deployment.
type Deployer struct {
	spec   Spec
	eps    []Endpoint
	pchain Endpoint
}

// New checks the spec; dial gives each node's endpoint (Dial in
// production).
func New(spec Spec, dial func(uri string) Endpoint) (*Deployer, error) {
	if err := spec.fill(); err != nil {
		return nil, err
	}
	d := &Deployer{spec: spec, pchain: dial(spec.PChain)}
	for _, uri := range spec.Nodes {
		d.eps = append(d.eps, dial(uri))
	}
	return d, nil
}

// NodeConfig is what one node's configuration needs for the chain.
type NodeConfig struct {
	URI    string `json:"uri"`
	NodeID string `json:"nodeID"`
	// TrackSubnets is the flag the node needs (with any subnets it already
	// tracks, comma-separated); Tracking whether its peers report it does.
	TrackSubnets string `json:"trackSubnets"`
	Tracking     *bool  `json:"tracking,omitempty"`
	// ChainConfig is where the node's chain config goes (write tokens,
	// directAPI; docs/operating/deployment.md), read when the chain starts.
	ChainConfig string `json:"chainConfig"`
	Serves      bool   `json:"serves"`
}

// Result is what a run did, or a dry run would do.
type Result struct {
	DryRun bool    `json:"dryRun"`
	Record *Record `json:"record"`
	// Nodes are the facts the checks were made on.
	Nodes  []NodeFacts  `json:"nodes"`
	Config []NodeConfig `json:"config"`
	// Issued are the transactions this run sent.
	Issued []ids.ID `json:"issued"`
	// Pending says what is left for the operator (empty once done).
	Pending []string `json:"pending,omitempty"`
}

func (d *Deployer) progress(format string, args ...any) {
	fmt.Fprintf(d.spec.Progress, format+"\n", args...)
}

// survey reads every node; with a subnet, also whether the others report
// it tracking the subnet, and with a chain, whether it runs the chain.
func (d *Deployer) survey(ctx context.Context, subnetID, chainID ids.ID) []NodeFacts {
	facts := make([]NodeFacts, len(d.eps))
	for i, e := range d.eps {
		facts[i] = readNode(ctx, d.spec.Nodes[i], e, d.pchain, d.spec.VMID, chainID)
	}
	if subnetID != ids.Empty {
		tracking(ctx, facts, d.eps, subnetID)
	}
	return facts
}

// networkID is the network the transactions go to: the issuing node's.
func (d *Deployer) networkID(ctx context.Context) (uint32, error) {
	id, err := d.pchain.GetNetworkID(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: info.getNetworkID of %s: %w", subnet.ErrPChainAPI, d.spec.PChain, err)
	}
	return id, nil
}

// Run deploys, or with dryRun checks and builds without writing or issuing
// anything. It resumes the record if there is one. ErrPending means the
// nodes must still be configured (Result.Pending says how); run again.
func (d *Deployer) Run(ctx context.Context, dryRun bool) (*Result, error) {
	networkID, err := d.networkID(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := LoadRecord(d.spec.RecordPath)
	if err != nil {
		return nil, err
	}
	res := &Result{DryRun: dryRun}
	switch {
	case len(d.spec.Genesis) > 0:
	case rec != nil:
		d.spec.Genesis = []byte(rec.Genesis)
	default:
		d.spec.Genesis = DefaultGenesis(time.Now())
	}
	if rec != nil {
		res.Nodes = d.survey(ctx, rec.SubnetID, rec.ChainID)
	} else {
		res.Nodes = d.survey(ctx, ids.Empty, ids.Empty)
	}
	if ps := Check(res.Nodes, networkID, d.spec.VMID, d.spec.PluginDir); len(ps) > 0 {
		return res, &NodesError{Problems: ps}
	}
	if rec == nil {
		if rec, err = d.newRecord(ctx, networkID, res.Nodes); err != nil {
			return res, err
		}
		if !dryRun {
			if err := rec.Save(d.spec.RecordPath); err != nil {
				return res, err
			}
			d.progress("recorded the deployment in %s: subnet %s, chain %s, %d transactions, %d nAVAX in fees",
				d.spec.RecordPath, rec.SubnetID, rec.ChainID, len(rec.Steps), rec.FeeNAVAX())
		}
	} else if err := d.matches(rec, networkID, res.Nodes); err != nil {
		return res, err
	}
	res.Record = rec
	res.Config = d.config(rec, res.Nodes)
	if dryRun || rec.Done() && allServe(res.Nodes) {
		return res, nil
	}
	for i := range rec.Steps {
		if rec.Steps[i].State == Committed {
			continue
		}
		if rec.Steps[i].Kind == CreateChain {
			facts, ok := d.awaitTracking(ctx, rec)
			res.Nodes, res.Config = facts, d.config(rec, facts)
			if !ok {
				res.Pending = trackingLines(res.Config)
				return res, ErrPending
			}
		}
		issued, err := d.settle(ctx, rec, i)
		if issued {
			res.Issued = append(res.Issued, rec.Steps[i].TxID)
		}
		if err != nil {
			return res, err
		}
	}
	facts, ok := d.awaitServing(ctx, rec)
	res.Nodes, res.Config = facts, d.config(rec, facts)
	if !ok {
		for _, c := range res.Config {
			if !c.Serves {
				res.Pending = append(res.Pending, fmt.Sprintf("%s (%s) does not run chain %s yet: check that it tracks subnet %s (%s) and its log (<log-dir>/%s.log)",
					c.URI, c.NodeID, rec.ChainID, rec.SubnetID, c.TrackSubnets, rec.ChainID))
			}
		}
		return res, ErrPending
	}
	d.progress("every node runs chain %s", rec.ChainID)
	return res, nil
}

// newRecord builds and signs every transaction of a new deployment.
func (d *Deployer) newRecord(ctx context.Context, networkID uint32, facts []NodeFacts) (*Record, error) {
	rec := &Record{
		Version: RecordVersion, NetworkID: networkID, VMID: d.spec.VMID, ChainName: d.spec.ChainName,
		Genesis: string(d.spec.Genesis), GenesisSHA256: d.spec.genesisDigest(), Weight: d.spec.Weight, OwnerKey: d.spec.KeyPath,
		Owner: (&subnet.Facts{NetworkID: networkID}).FormatAddress(d.spec.Key.Address()),
	}
	for _, f := range facts {
		rec.Nodes = append(rec.Nodes, RecordNode{URI: f.URI, NodeID: f.NodeID})
	}
	if err := d.build(ctx, rec, 0, facts); err != nil {
		return nil, err
	}
	return rec, nil
}

// build (re)builds the steps from the first on, each spending the change
// of the one before (the committed steps before first are on the P-chain).
func (d *Deployer) build(ctx context.Context, rec *Record, first int, facts []NodeFacts) error {
	owners := map[ids.ID]fx.Owner{}
	if first > 0 {
		s, err := d.pchain.GetSubnet(ctx, rec.SubnetID)
		if err != nil {
			return fmt.Errorf("%w: subnet %s: %w", subnet.ErrNoSubnet, rec.SubnetID, err)
		}
		owners[rec.SubnetID] = &secp256k1fx.OutputOwners{Locktime: s.Locktime, Threshold: s.Threshold, Addrs: s.ControlKeys}
	}
	b, err := newBuilder(ctx, d.pchain, d.spec.Key, owners)
	if err != nil {
		return err
	}
	pTime, err := d.pchain.GetTimestamp(ctx)
	if err != nil {
		return fmt.Errorf("%w: platform.getTimestamp: %w", subnet.ErrPChainAPI, err)
	}
	steps := rec.Steps[:first:first]
	if first == 0 {
		s, err := b.createSubnet(ctx)
		if err != nil {
			return err
		}
		rec.SubnetID = s.TxID
		steps = append(steps, s)
	}
	for _, f := range facts {
		if i := slices.IndexFunc(steps, func(s Step) bool { return s.Kind == AddValidator && s.NodeID == f.NodeID }); i >= 0 {
			continue
		}
		v, err := validator(rec.SubnetID, rec.NetworkID, pTime, f, rec.Weight)
		if err != nil {
			return err
		}
		s, err := b.addValidator(ctx, v)
		if err != nil {
			return err
		}
		steps = append(steps, s)
	}
	s, err := b.createChain(ctx, rec.SubnetID, d.spec.Genesis, rec.VMID, rec.ChainName)
	if err != nil {
		return err
	}
	if rec.ChainID != ids.Empty && rec.ChainID != s.TxID {
		d.progress("WARNING: the chain ID changes from %s to %s (its transaction was rebuilt): move the nodes' chain config to <chain-config-dir>/%s/", rec.ChainID, s.TxID, s.TxID)
	}
	rec.ChainID = s.TxID
	rec.Steps = append(steps, s)
	return nil
}

// matches checks that a record describes the deployment asked for, and
// takes the nodes' URIs as given now (a node may have moved).
func (d *Deployer) matches(rec *Record, networkID uint32, facts []NodeFacts) error {
	switch {
	case rec.NetworkID != networkID:
		return fmt.Errorf("%w: %s is for network %d, the nodes are on %d", ErrRecord, d.spec.RecordPath, rec.NetworkID, networkID)
	case rec.GenesisSHA256 != d.spec.genesisDigest():
		return fmt.Errorf("%w: %s created chain %s with another genesis (sha256 %s); give the same genesis to resume, or another record file for another chain",
			ErrRecord, d.spec.RecordPath, rec.ChainID, rec.GenesisSHA256)
	case rec.VMID != d.spec.VMID || rec.ChainName != d.spec.ChainName:
		return fmt.Errorf("%w: %s is for VM %s chain %q", ErrRecord, d.spec.RecordPath, rec.VMID, rec.ChainName)
	case len(rec.Nodes) != len(facts):
		return fmt.Errorf("%w: %s has %d validators, %d given (the validators of a deployed chain change with `schain validators add|remove`)",
			ErrRecord, d.spec.RecordPath, len(rec.Nodes), len(facts))
	}
	for i, f := range facts {
		j := slices.IndexFunc(rec.Nodes, func(n RecordNode) bool { return n.NodeID == f.NodeID })
		if j < 0 {
			return fmt.Errorf("%w: %s (%s) is not a validator of %s (the validators of a deployed chain change with `schain validators add|remove`)",
				ErrRecord, f.URI, f.NodeID, d.spec.RecordPath)
		}
		rec.Nodes[j].URI = d.spec.Nodes[i]
	}
	return nil
}

// settle brings step i to committed: it asks the P-chain first (a step
// issued by a run that stopped may be committed already), then issues the
// recorded bytes. A step never issued before that the node refuses (its
// inputs spent elsewhere, the gas price risen) is rebuilt with the steps
// after it; an issued step is never rebuilt, so a subnet transaction that
// may still commit is never doubled. It reports whether it sent the
// transaction.
func (d *Deployer) settle(ctx context.Context, rec *Record, i int) (bool, error) {
	st := &rec.Steps[i]
	if done, err := d.already(ctx, rec, st); err != nil || done {
		return false, errors.Join(err, rec.Save(d.spec.RecordPath))
	}
	first := st.State == Signed
	issued, err := d.issue(ctx, rec, st)
	if err != nil && first && errors.Is(err, subnet.ErrRejected) {
		d.progress("the node refused %s %s, never issued before (%v): building it again", st.Kind, st.TxID, err)
		if err := d.build(ctx, rec, i, d.survey(ctx, ids.Empty, ids.Empty)); err != nil {
			return false, err
		}
		if err := rec.Save(d.spec.RecordPath); err != nil {
			return false, err
		}
		issued, err = d.issue(ctx, rec, &rec.Steps[i])
	}
	return issued, err
}

// already marks a step committed if the P-chain committed it (or, for a
// validator, if the node validates the subnet already), and waits for one
// the P-chain is processing.
func (d *Deployer) already(ctx context.Context, rec *Record, st *Step) (bool, error) {
	s, err := d.pchain.GetTxStatus(ctx, st.TxID)
	if err != nil {
		return false, fmt.Errorf("%w: platform.getTxStatus(%s): %w", subnet.ErrPChainAPI, st.TxID, err)
	}
	switch s.Status {
	case status.Processing:
		if err := subnet.Await(ctx, d.pchain, st.TxID, d.spec.PollEvery); err != nil {
			return false, err
		}
		fallthrough
	case status.Committed:
		h, err := d.pchain.GetHeight(ctx)
		if err != nil {
			return false, fmt.Errorf("%w: platform.getHeight: %w", subnet.ErrPChainAPI, err)
		}
		st.State, st.PChainHeight = Committed, h
		d.progress("%s %s: committed (found on the P-chain)", st.Kind, st.TxID)
		return true, nil
	}
	if st.Kind == AddValidator && rec.Steps[0].State == Committed {
		f, err := subnet.Read(ctx, d.pchain, rec.SubnetID)
		if err != nil {
			return false, err
		}
		if v, ok := f.Validator(st.NodeID); ok {
			st.State, st.Note = Committed, fmt.Sprintf("%s already validated the subnet (transaction %s)", st.NodeID, v.TxID)
			d.progress("%s %s: %s", st.Kind, st.NodeID, st.Note)
			return true, nil
		}
	}
	return false, nil
}

// issue records the step as issued, sends it and waits for the commit.
func (d *Deployer) issue(ctx context.Context, rec *Record, st *Step) (bool, error) {
	b, err := st.bytes()
	if err != nil {
		return false, fmt.Errorf("%w: step %s: %w", ErrRecord, st.TxID, err)
	}
	st.State = Issued
	if err := rec.Save(d.spec.RecordPath); err != nil {
		return false, err
	}
	what := string(st.Kind)
	if st.Kind == AddValidator {
		what += " " + st.NodeID.String()
	}
	d.progress("issuing %s (%s, %d nAVAX)...", what, st.TxID, st.FeeNAVAX)
	r, err := subnet.Submit(ctx, d.pchain, d.pchain, st.TxID, b, d.spec.PollEvery)
	if err != nil {
		return true, err
	}
	st.State, st.PChainHeight = Committed, r.PChainHeight
	d.progress("  committed at P-chain height %d", r.PChainHeight)
	return true, rec.Save(d.spec.RecordPath)
}

// awaitTracking waits up to TrackWait until every node's peers report it
// tracking the subnet. A node that has no peer among the deployment's (a
// one-node deployment) cannot be seen tracking: it is taken on trust, and
// awaitServing checks it once the chain exists.
func (d *Deployer) awaitTracking(ctx context.Context, rec *Record) ([]NodeFacts, bool) {
	var facts []NodeFacts
	ok := d.poll(ctx, d.spec.TrackWait, func() bool {
		facts = d.survey(ctx, rec.SubnetID, ids.Empty)
		for _, f := range facts {
			if f.Tracks != nil && !*f.Tracks || f.Tracks == nil && len(facts) > 1 {
				return false
			}
		}
		return true
	})
	return facts, ok
}

// awaitServing waits up to ServeWait until every node runs the chain.
func (d *Deployer) awaitServing(ctx context.Context, rec *Record) ([]NodeFacts, bool) {
	var facts []NodeFacts
	ok := d.poll(ctx, d.spec.ServeWait, func() bool {
		facts = d.survey(ctx, rec.SubnetID, rec.ChainID)
		return allServe(facts)
	})
	return facts, ok
}

// poll calls done every PollEvery until it reports true (true), or for
// longer than limit or ctx ends (false); it calls it at least once.
func (d *Deployer) poll(ctx context.Context, limit time.Duration, done func() bool) bool {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(d.spec.PollEvery)
	defer tick.Stop()
	for !done() {
		if !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

func allServe(facts []NodeFacts) bool {
	for _, f := range facts {
		if !f.Serves {
			return false
		}
	}
	return true
}

// config is each node's configuration lines for the record's chain.
func (d *Deployer) config(rec *Record, facts []NodeFacts) []NodeConfig {
	out := make([]NodeConfig, len(facts))
	for i, f := range facts {
		out[i] = NodeConfig{
			URI: f.URI, NodeID: f.NodeID.String(), Tracking: f.Tracks, Serves: f.Serves,
			TrackSubnets: "--track-subnets=" + rec.SubnetID.String(),
			ChainConfig:  filepath.Join(d.spec.ChainConfigDir, rec.ChainID.String(), "config.json"),
		}
	}
	return out
}

// trackingLines says what each node that is not seen tracking the subnet
// must do.
func trackingLines(cfg []NodeConfig) []string {
	var out []string
	for _, c := range cfg {
		if c.Tracking != nil && *c.Tracking {
			continue
		}
		seen := "its peers do not report it tracking the subnet"
		if c.Tracking == nil {
			seen = "no peer reports what it tracks (not connected to the others?)"
		}
		out = append(out, fmt.Sprintf("%s (%s): %s: start it with %s (added to any subnets it tracks) and the chain config at %s, then run schain deploy again",
			c.URI, c.NodeID, seen, c.TrackSubnets, c.ChainConfig))
	}
	return out
}
