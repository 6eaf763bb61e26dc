package deploy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/vms/platformvm/fx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/vm"
	vmconfig "github.com/s-chain/schain/vm/config"
)

const genesis = `{"timestamp": 1800000000000}`

func spec(t *testing.T, p *pchain, key *secp256k1.PrivateKey, record string) Spec {
	t.Helper()
	return Spec{
		Nodes: p.uris(), Key: key, KeyPath: "/etc/schain/owner.key", Genesis: []byte(genesis),
		VMID: vm.ID, RecordPath: record, PollEvery: time.Millisecond, ServeWait: time.Second,
	}
}

func run(t *testing.T, s Spec, p *pchain, dryRun bool) (*Result, error) {
	t.Helper()
	d, err := New(s, p.endpoint)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.Run(ctx, dryRun)
}

func trackAll(p *pchain, subnetID ids.ID) {
	for _, n := range p.nodes {
		n.tracks.Add(subnetID)
	}
}

// TestDeployResumes: the first run creates the subnet and adds every
// validator, then stops (ErrPending) with the --track-subnets and chain
// config lines, since no node tracks the subnet yet; once they do, the
// second run creates the chain with the ID the first printed; a third run
// issues nothing.
func TestDeployResumes(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 3)
	record := filepath.Join(t.TempDir(), "deploy.json")
	s := spec(t, p, key, record)

	res, err := run(t, s, p, false)
	require.ErrorIs(err, ErrPending)
	rec := res.Record
	require.Len(rec.Steps, 5)
	require.Equal(1, p.count(string(CreateSubnet)))
	require.Equal(3, p.count(string(AddValidator)))
	require.Equal(0, p.count(string(CreateChain)))
	require.Len(res.Pending, 3)
	for _, line := range res.Pending {
		require.Contains(line, "--track-subnets="+rec.SubnetID.String())
		require.Contains(line, filepath.Join(rec.ChainID.String(), "config.json"))
	}
	saved, err := LoadRecord(record)
	require.NoError(err)
	require.Equal(rec.SubnetID, saved.SubnetID)
	require.Equal(Signed, saved.Steps[4].State, "the chain transaction waits, signed")
	require.Equal("/etc/schain/owner.key", saved.OwnerKey)

	trackAll(p, rec.SubnetID)
	res, err = run(t, s, p, false)
	require.NoError(err)
	require.Empty(res.Pending)
	require.Equal([]ids.ID{rec.ChainID}, res.Issued, "only the chain, with the ID the first run printed")
	require.True(res.Record.Done())
	require.Equal(1, p.count(string(CreateSubnet)))
	require.Equal(1, p.count(string(CreateChain)))
	require.Equal(rec.SubnetID, p.chains[rec.ChainID])
	for _, c := range res.Config {
		require.True(c.Serves)
	}

	res, err = run(t, s, p, false)
	require.NoError(err)
	require.Empty(res.Issued, "a third run changes nothing")
	require.Equal(1, p.count(string(CreateSubnet)))
	require.Len(p.vdrs[rec.SubnetID], 3)
}

// TestResumeAfterLostAnswer: the subnet's transaction commits but the
// answer is lost; the run fails, and the next finds it committed on the
// P-chain and continues: one subnet, never two.
func TestResumeAfterLostAnswer(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 2)
	record := filepath.Join(t.TempDir(), "deploy.json")
	s := spec(t, p, key, record)
	p.loseAnswer[string(CreateSubnet)] = true

	_, err := run(t, s, p, false)
	require.ErrorIs(err, subnet.ErrPChainAPI)
	saved, err := LoadRecord(record)
	require.NoError(err)
	require.Equal(Issued, saved.Steps[0].State, "recorded as issued before it was sent")

	trackAll(p, saved.SubnetID)
	res, err := run(t, s, p, false)
	require.NoError(err)
	require.True(res.Record.Done())
	require.Equal(saved.SubnetID, res.Record.SubnetID)
	require.Equal(1, p.count(string(CreateSubnet)), "one subnet")
	require.Len(p.subnets, 1)
	require.Equal(saved.SubnetID, p.chains[res.Record.ChainID])
}

// TestRefusedStepRebuilt: while the run waits for the nodes, another
// wallet of the key spends its UTXOs; the signed chain transaction, never
// issued, is refused and built again (a new chain ID, said loudly), while
// the committed subnet stays.
func TestRefusedStepRebuilt(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 2)
	record := filepath.Join(t.TempDir(), "deploy.json")
	s := spec(t, p, key, record)
	res, err := run(t, s, p, false)
	require.ErrorIs(err, ErrPending)
	first := res.Record

	p.spendAll(key)
	trackAll(p, first.SubnetID)
	var progress bytes.Buffer
	s.Progress = &progress
	res, err = run(t, s, p, false)
	require.NoError(err)
	require.Equal(first.SubnetID, res.Record.SubnetID)
	require.NotEqual(first.ChainID, res.Record.ChainID)
	require.Equal(first.SubnetID, p.chains[res.Record.ChainID])
	require.Contains(progress.String(), "the chain ID changes from "+first.ChainID.String())
	require.Equal(1, p.count(string(CreateSubnet)))
}

// TestIssuedSubnetNeverRebuilt: a subnet transaction recorded as issued
// that the P-chain does not know and refuses (its inputs spent) is not
// built again: that could make a second subnet if the first commits after
// all. The run stops naming it.
func TestIssuedSubnetNeverRebuilt(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 2)
	record := filepath.Join(t.TempDir(), "deploy.json")
	s := spec(t, p, key, record)
	res, err := run(t, s, p, true)
	require.NoError(err)
	rec := res.Record
	rec.Steps[0].State = Issued // sent by a run that crashed before the answer
	require.NoError(rec.Save(record))
	p.spendAll(key)

	_, err = run(t, s, p, false)
	require.ErrorIs(err, subnet.ErrRejected)
	require.ErrorContains(err, rec.SubnetID.String())
	require.Zero(p.count(string(CreateSubnet)))
	saved, err := LoadRecord(record)
	require.NoError(err)
	require.Equal(rec.SubnetID, saved.SubnetID, "the record keeps the subnet it may have created")
}

// TestValidatorAddedMeanwhile: a validator someone else added is not added
// twice; the transactions chained on its skipped one are rebuilt.
func TestValidatorAddedMeanwhile(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 3)
	record := filepath.Join(t.TempDir(), "deploy.json")
	s := spec(t, p, key, record)
	// Signed, and the subnet committed, but no validator yet.
	res, err := run(t, s, p, true)
	require.NoError(err)
	rec := res.Record
	require.NoError(rec.Save(record))
	d, err := New(s, p.endpoint)
	require.NoError(err)
	_, err = d.issue(context.Background(), rec, &rec.Steps[0])
	require.NoError(err)
	// The second validator, added by another wallet of the key.
	ctx := context.Background()
	owners := map[ids.ID]fx.Owner{rec.SubnetID: &secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{key.Address()}}}
	b, err := newBuilder(ctx, p.endpoint(p.nodes[0].uri), key, owners)
	require.NoError(err)
	f := readNode(ctx, p.nodes[1].uri, p.endpoint(p.nodes[1].uri), p.endpoint(p.nodes[0].uri), vm.ID, ids.Empty)
	v, err := validator(rec.SubnetID, 1337, pTime, f, DefaultWeight)
	require.NoError(err)
	other, err := b.addValidator(ctx, v)
	require.NoError(err)
	raw, err := other.bytes()
	require.NoError(err)
	_, err = p.issue(raw)
	require.NoError(err)
	require.Equal(p.nodes[1].id, rec.Steps[2].NodeID)
	trackAll(p, rec.SubnetID)

	res, err = run(t, s, p, false)
	require.NoError(err)
	require.True(res.Record.Done())
	require.Len(p.vdrs[rec.SubnetID], 3, "each node once")
	require.Equal(3, p.count(string(AddValidator)), "two by the deployment, one by the other wallet")
	// Depending on the UTXO the other wallet spent, the deployment saw the
	// validator there, or rebuilt its step into the very transaction the
	// other wallet had issued (signatures are deterministic).
	if st := res.Record.Steps[2]; st.TxID != other.TxID {
		require.Contains(st.Note, "already validated", "%+v", res.Record.Steps)
	}
}

// TestDryRun issues nothing and writes no record, and shows the fees and
// each node's lines.
func TestDryRun(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 2)
	record := filepath.Join(t.TempDir(), "deploy.json")
	res, err := run(t, spec(t, p, key, record), p, true)
	require.NoError(err)
	require.True(res.DryRun)
	require.Positive(res.Record.FeeNAVAX())
	for _, st := range res.Record.Steps {
		require.Positive(st.FeeNAVAX)
		require.Equal(Signed, st.State)
	}
	require.Len(res.Config, 2)
	require.Equal("--track-subnets="+res.Record.SubnetID.String(), res.Config[0].TrackSubnets)
	_, err = os.Stat(record)
	require.ErrorIs(err, os.ErrNotExist)
	require.Empty(p.issued)
}

// TestRecordMismatch: a record is resumed only for the deployment it
// describes.
func TestRecordMismatch(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 2)
	record := filepath.Join(t.TempDir(), "deploy.json")
	s := spec(t, p, key, record)
	_, err := run(t, s, p, false)
	require.ErrorIs(err, ErrPending)

	other := s
	other.Genesis = []byte(`{"timestamp": 1}`)
	_, err = run(t, other, p, false)
	require.ErrorIs(err, ErrRecord)
	require.ErrorContains(err, "another genesis")

	// Without a genesis, the record's is taken: the run resumes.
	other = s
	other.Genesis = nil
	_, err = run(t, other, p, false)
	require.ErrorIs(err, ErrPending)

	other = s
	other.Nodes = s.Nodes[:1]
	_, err = run(t, other, p, false)
	require.ErrorIs(err, ErrRecord)
	require.ErrorContains(err, "schain validators add|remove")
	require.Equal(1, p.count(string(CreateSubnet)))
}

// TestDefaultGenesis: a deployed chain without a genesis given starts with
// every known change of execution active from the first block.
func TestDefaultGenesis(t *testing.T) {
	g, err := vmconfig.ParseGenesis(DefaultGenesis(time.UnixMilli(1_800_000_000_000)))
	require.NoError(t, err)
	require.Equal(t, uint64(1_800_000_000_000), g.Timestamp)
	require.Equal(t, vmconfig.UpgradesAtGenesis(), g.Upgrades)
}

// TestCheck: every refusal names the node and what fixes it.
func TestCheck(t *testing.T) {
	good := func() NodeFacts {
		return NodeFacts{URI: "http://a:9650", NodeID: ids.GenerateTestNodeID(), NetworkID: 7, Bootstrapped: true, HasVM: true, Primary: &subnet.Primary{}}
	}
	tests := []struct {
		name   string
		change func(*NodeFacts)
		want   string
	}{
		{"ready", func(*NodeFacts) {}, ""},
		{"unreachable", func(f *NodeFacts) { f.Err = "connection refused" }, "unreachable"},
		{"another network", func(f *NodeFacts) { f.NetworkID = 8 }, "network ID 8"},
		{"bootstrapping", func(f *NodeFacts) { f.Bootstrapped = false }, "bootstrapping"},
		{"no plugin", func(f *NodeFacts) { f.HasVM = false }, "/plugins/" + vm.ID.String()},
		{"not a primary validator", func(f *NodeFacts) { f.Primary = nil }, "AddPermissionlessValidatorTx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good()
			tt.change(&f)
			ps := Check([]NodeFacts{good(), f}, 7, vm.ID, "/var/lib/avalanchego/plugins")
			if tt.want == "" {
				require.Empty(t, ps)
				return
			}
			require.Len(t, ps, 1)
			require.Equal(t, f.URI, ps[0].URI)
			require.Contains(t, ps[0].String(), tt.want)
		})
	}
	f := good()
	ps := Check([]NodeFacts{f, f}, 7, vm.ID, "")
	require.Len(t, ps, 1)
	require.Contains(t, ps[0].What, "the same node")
}

// TestNodesRefused: a node without the plugin stops the run before
// anything is signed or written.
func TestNodesRefused(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 2)
	p.nodes[1].hasVM = false
	record := filepath.Join(t.TempDir(), "deploy.json")
	_, err := run(t, spec(t, p, key, record), p, false)
	require.ErrorIs(err, ErrNodes)
	require.ErrorContains(err, p.nodes[1].uri)
	_, serr := os.Stat(record)
	require.ErrorIs(serr, os.ErrNotExist)
	require.Empty(p.issued)
}

// TestStatus: nodes agree when they accepted the same block at the highest
// height all reached; a node with another block there disagrees.
func TestStatus(t *testing.T) {
	require := require.New(t)
	key := newKey(t)
	p := newPChain(t, key, 3)
	record := filepath.Join(t.TempDir(), "deploy.json")
	s := spec(t, p, key, record)
	_, err := run(t, s, p, false)
	require.ErrorIs(err, ErrPending)
	rec, err := LoadRecord(record)
	require.NoError(err)
	trackAll(p, rec.SubnetID)
	res, err := run(t, s, p, false)
	require.NoError(err)

	b5, b6, other := ids.GenerateTestID(), ids.GenerateTestID(), ids.GenerateTestID()
	chains := map[string]*fakeChain{
		p.nodes[0].uri: {height: 6, blocks: map[uint64]ids.ID{5: b5, 6: b6}},
		p.nodes[1].uri: {height: 5, blocks: map[uint64]ids.ID{5: b5}},
		p.nodes[2].uri: {height: 6, blocks: map[uint64]ids.ID{5: b5, 6: b6}},
	}
	chain := func(uri string) (Chain, error) { return chains[uri], nil }
	st, err := ReadStatus(context.Background(), res.Record, p.endpoint, chain)
	require.NoError(err)
	require.True(st.OK(), "%+v", st)
	require.Equal(uint64(5), st.Height)

	chains[p.nodes[2].uri].blocks[5] = other
	st, err = ReadStatus(context.Background(), res.Record, p.endpoint, chain)
	require.NoError(err)
	require.False(st.Agree)
	require.False(st.OK())
	require.True(strings.HasPrefix(st.Nodes[2].URI, "http://198.18."))
}
