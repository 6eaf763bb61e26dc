package subnet

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/rpc"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	platformapi "github.com/ava-labs/avalanchego/vms/platformvm/api"
	"github.com/ava-labs/avalanchego/vms/platformvm/status"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/stretchr/testify/require"
)

var (
	subnetID = ids.GenerateTestID()
	nodeA    = ids.GenerateTestNodeID()
	nodeB    = ids.GenerateTestNodeID()
	nodeC    = ids.GenerateTestNodeID()
	pTime    = time.Unix(1_800_000_000, 0)
)

// facts is a permissioned 3-validator subnet owned by key.
func facts(t *testing.T, key *secp256k1.PrivateKey) *Facts {
	t.Helper()
	f := &Facts{
		NetworkID: constants.LocalID, SubnetID: subnetID, Height: 42, Time: pTime,
		Owner: Owner{Addresses: []ids.ShortID{key.Address()}, Threshold: 1},
	}
	for _, n := range []ids.NodeID{nodeA, nodeB, nodeC} {
		f.Validators = append(f.Validators, Validator{NodeID: n, Weight: 100, Start: pTime.Add(-time.Hour), End: pTime.Add(time.Hour)})
	}
	return f
}

func newKey(t *testing.T) *secp256k1.PrivateKey {
	t.Helper()
	k, err := secp256k1.NewPrivateKey()
	require.NoError(t, err)
	return k
}

func TestAuthorize(t *testing.T) {
	key, other := newKey(t), newKey(t)
	tests := []struct {
		name   string
		change func(*Facts)
		want   error
	}{
		{"owner", func(*Facts) {}, nil},
		{"one of several owners, threshold 1", func(f *Facts) { f.Owner.Addresses = []ids.ShortID{other.Address(), key.Address()} }, nil},
		{"another key", func(f *Facts) { f.Owner.Addresses = []ids.ShortID{other.Address()} }, ErrNotOwner},
		{"threshold 2", func(f *Facts) {
			f.Owner.Addresses = []ids.ShortID{other.Address(), key.Address()}
			f.Owner.Threshold = 2
		}, ErrThreshold},
		{"locked", func(f *Facts) { f.Owner.Locktime = uint64(pTime.Add(time.Minute).Unix()) }, ErrOwnerLocked},
		{"lock expired", func(f *Facts) { f.Owner.Locktime = uint64(pTime.Unix()) }, nil},
		{"converted to an L1", func(f *Facts) { f.ConversionID = ids.GenerateTestID() }, ErrNotPermissioned},
		{"permissionless", func(f *Facts) { f.TransformationTxID = ids.GenerateTestID() }, ErrNotPermissioned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := facts(t, key)
			tt.change(f)
			err := f.Authorize(key.Address())
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
	// The refusal names both addresses in the wallet's form.
	f := facts(t, key)
	f.Owner.Addresses = []ids.ShortID{other.Address()}
	err := f.Authorize(key.Address())
	require.ErrorContains(t, err, f.FormatAddress(key.Address()))
	require.ErrorContains(t, err, f.FormatAddress(other.Address()))
	require.True(t, strings.HasPrefix(f.FormatAddress(key.Address()), "P-local1"))
}

func TestCheckRemove(t *testing.T) {
	key := newKey(t)
	f := facts(t, key)
	v, err := f.CheckRemove(nodeB)
	require.NoError(t, err)
	require.Equal(t, nodeB, v.NodeID)

	_, err = f.CheckRemove(ids.GenerateTestNodeID())
	require.ErrorIs(t, err, ErrNotValidator)

	f.Validators = f.Validators[:1]
	_, err = f.CheckRemove(nodeA)
	require.ErrorIs(t, err, ErrLastValidator)
}

func TestCheckAdd(t *testing.T) {
	key := newKey(t)
	newNode := ids.GenerateTestNodeID()
	connected, disconnected := true, false
	primary := &Primary{NodeID: newNode, Start: pTime.Add(-time.Hour), End: pTime.Add(48 * time.Hour), Connected: &connected}
	offline := &Primary{NodeID: newNode, Start: primary.Start, End: primary.End, Connected: &disconnected}
	tests := []struct {
		name    string
		req     Addition
		primary *Primary
		change  func(*Facts)
		want    error
		weight  uint64
		end     time.Time
	}{
		{name: "defaults: the shared weight, the primary's end", req: Addition{NodeID: newNode}, primary: primary, weight: 100, end: primary.End},
		{name: "explicit", req: Addition{NodeID: newNode, Weight: 7, End: pTime.Add(time.Hour)}, primary: primary, weight: 7, end: pTime.Add(time.Hour)},
		{name: "already a validator", req: Addition{NodeID: nodeA}, primary: primary, want: ErrAlreadyValidator},
		{name: "not a primary validator", req: Addition{NodeID: newNode}, want: ErrNotPrimaryValidator},
		{name: "offline", req: Addition{NodeID: newNode}, primary: offline, want: ErrOffline},
		{name: "offline, allowed", req: Addition{NodeID: newNode, AllowOffline: true}, primary: offline, weight: 100, end: primary.End},
		{name: "ends after the primary validation", req: Addition{NodeID: newNode, End: primary.End.Add(time.Second)}, primary: primary, want: ErrEndTime},
		{name: "ends now", req: Addition{NodeID: newNode, End: pTime}, primary: primary, want: ErrEndTime},
		{name: "weights differ", req: Addition{NodeID: newNode}, primary: primary, change: func(f *Facts) { f.Validators[1].Weight = 5 }, want: ErrWeight},
		{name: "weights differ, weight given", req: Addition{NodeID: newNode, Weight: 5}, primary: primary, change: func(f *Facts) { f.Validators[1].Weight = 5 }, weight: 5, end: primary.End},
		{name: "no validator to copy the weight from", req: Addition{NodeID: newNode}, primary: primary, change: func(f *Facts) { f.Validators = nil }, want: ErrWeight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := facts(t, key)
			if tt.change != nil {
				tt.change(f)
			}
			sv, err := f.CheckAdd(tt.req, tt.primary)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			require.NoError(t, sv.Verify())
			require.Equal(t, subnetID, sv.Subnet)
			require.Equal(t, tt.req.NodeID, sv.NodeID)
			require.Equal(t, tt.weight, sv.Wght)
			require.Equal(t, tt.end.Unix(), sv.EndTime().Unix())
			require.Equal(t, pTime.Unix(), sv.StartTime().Unix())
		})
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := newKey(t)
	path := filepath.Join(dir, "owner.key")
	require.NoError(t, WriteKey(path, key))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	require.ErrorIs(t, WriteKey(path, newKey(t)), ErrKeyFile, "never overwrites")

	got, err := ReadKey(path)
	require.NoError(t, err)
	require.Equal(t, key.Address(), got.Address())

	hexPath := filepath.Join(dir, "hex.key")
	require.NoError(t, os.WriteFile(hexPath, []byte("  0x"+strings.ToUpper(hex.EncodeToString(key.Bytes()))+"\n"), 0o600))
	got, err = ReadKey(hexPath)
	require.NoError(t, err)
	require.Equal(t, key.Address(), got.Address())

	for name, content := range map[string]string{
		"empty":     "\n",
		"truncated": key.String()[:20],
		"short hex": "abcd",
		"garbage":   "hello",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
			_, err := ReadKey(p)
			require.ErrorIs(t, err, ErrKeyFile)
			if len(content) > 8 {
				require.NotContains(t, err.Error(), strings.TrimSpace(content), "the error never quotes the secret")
			}
		})
	}
	_, err = ReadKey(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, ErrKeyFile)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// fakeNode answers Read's calls from fields.
type fakeNode struct {
	// blocks are the P-chain's blocks by height (GetBlockByHeight); reads
	// counts the calls.
	blocks     map[uint64][]byte
	reads      atomic.Int64
	subnet     platformvm.GetSubnetClientResponse
	subnetErr  error
	validators map[ids.ID][]platformvm.ClientPermissionlessValidator
	statuses   []status.Status
	reason     string
	polls      int
}

func (*fakeNode) GetNetworkID(context.Context, ...rpc.Option) (uint32, error) {
	return constants.LocalID, nil
}

func (*fakeNode) GetHeight(context.Context, ...rpc.Option) (uint64, error) { return 42, nil }

func (*fakeNode) GetTimestamp(context.Context, ...rpc.Option) (time.Time, error) { return pTime, nil }

func (n *fakeNode) GetSubnet(context.Context, ids.ID, ...rpc.Option) (platformvm.GetSubnetClientResponse, error) {
	return n.subnet, n.subnetErr
}

func (n *fakeNode) GetCurrentValidators(_ context.Context, id ids.ID, nodeIDs []ids.NodeID, _ ...rpc.Option) ([]platformvm.ClientPermissionlessValidator, error) {
	var out []platformvm.ClientPermissionlessValidator
	for _, v := range n.validators[id] {
		if len(nodeIDs) == 0 || v.NodeID == nodeIDs[0] {
			out = append(out, v)
		}
	}
	return out, nil
}

func (*fakeNode) ValidatedBy(context.Context, ids.ID, ...rpc.Option) (ids.ID, error) {
	return subnetID, nil
}

// GetValidatorsAt answers the current validators at any height.
func (n *fakeNode) GetValidatorsAt(_ context.Context, id ids.ID, _ platformapi.Height, _ ...rpc.Option) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	out := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, v := range n.validators[id] {
		out[v.NodeID] = &validators.GetValidatorOutput{NodeID: v.NodeID, Weight: v.Weight}
	}
	return out, nil
}

func (n *fakeNode) GetBlockByHeight(_ context.Context, h uint64, _ ...rpc.Option) ([]byte, error) {
	n.reads.Add(1)
	b, ok := n.blocks[h]
	if !ok {
		return nil, fmt.Errorf("no block at height %d", h)
	}
	return b, nil
}

func (*fakeNode) IssueTx(context.Context, []byte, ...rpc.Option) (ids.ID, error) {
	return ids.Empty, errors.New("not used")
}

// GetTxStatus walks through statuses, then stays on the last one.
func (n *fakeNode) GetTxStatus(context.Context, ids.ID, ...rpc.Option) (*platformvm.GetTxStatusResponse, error) {
	s := n.statuses[min(n.polls, len(n.statuses)-1)]
	n.polls++
	return &platformvm.GetTxStatusResponse{Status: s, Reason: n.reason}, nil
}

func staker(n ids.NodeID, weight uint64) platformvm.ClientPermissionlessValidator {
	return platformvm.ClientPermissionlessValidator{ClientStaker: platformvm.ClientStaker{
		NodeID: n, Weight: weight, StartTime: uint64(pTime.Unix()) - 60, EndTime: uint64(pTime.Unix()) + 3600,
	}}
}

func TestRead(t *testing.T) {
	key := newKey(t)
	n := &fakeNode{
		subnet: platformvm.GetSubnetClientResponse{IsPermissioned: true, ControlKeys: []ids.ShortID{key.Address()}, Threshold: 1},
		validators: map[ids.ID][]platformvm.ClientPermissionlessValidator{
			subnetID:                   {staker(nodeC, 3), staker(nodeA, 1), staker(nodeB, 2)},
			constants.PrimaryNetworkID: {staker(nodeA, 2000)},
		},
	}
	f, err := Read(context.Background(), n, subnetID)
	require.NoError(t, err)
	require.Equal(t, uint64(42), f.Height)
	require.NoError(t, f.Authorize(key.Address()))
	require.Len(t, f.Validators, 3)
	for i := 1; i < len(f.Validators); i++ {
		require.Negative(t, f.Validators[i-1].NodeID.Compare(f.Validators[i].NodeID), "sorted by node ID")
	}
	v, ok := f.Validator(nodeB)
	require.True(t, ok)
	require.Equal(t, uint64(2), v.Weight)
	require.Equal(t, pTime.Add(time.Hour).Unix(), v.End.Unix())

	p, err := ReadPrimary(context.Background(), n, nodeA)
	require.NoError(t, err)
	require.Equal(t, nodeA, p.NodeID)
	p, err = ReadPrimary(context.Background(), n, nodeB)
	require.NoError(t, err)
	require.Nil(t, p, "not a primary validator")

	n.subnetErr = errors.New("not found")
	_, err = Read(context.Background(), n, subnetID)
	require.ErrorIs(t, err, ErrNoSubnet)
}

func TestAwait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	txID := ids.GenerateTestID()

	n := &fakeNode{statuses: []status.Status{status.Unknown, status.Processing, status.Committed}}
	require.NoError(t, Await(ctx, n, txID, time.Millisecond))
	require.Equal(t, 3, n.polls, "polled until committed")

	n = &fakeNode{statuses: []status.Status{status.Processing, status.Dropped}, reason: "failed to read consumed UTXO"}
	err := Await(ctx, n, txID, time.Millisecond)
	require.ErrorIs(t, err, ErrRejected)
	require.ErrorContains(t, err, "failed to read consumed UTXO")

	n = &fakeNode{statuses: []status.Status{status.Processing}}
	a := &Admin{node: n, issuer: n, PollEvery: time.Millisecond}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	err = Await(short, n, txID, time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, txID.String(), "names the transaction that may still commit")

	_, err = a.Issue(ctx, &Plan{})
	require.ErrorContains(t, err, "needs a plan")
}

func TestBurned(t *testing.T) {
	asset, other := ids.GenerateTestID(), ids.GenerateTestID()
	in := func(id ids.ID, amt uint64) *avax.TransferableInput {
		return &avax.TransferableInput{Asset: avax.Asset{ID: id}, In: &secp256k1fx.TransferInput{Amt: amt}}
	}
	out := func(id ids.ID, amt uint64) *avax.TransferableOutput {
		return &avax.TransferableOutput{Asset: avax.Asset{ID: id}, Out: &secp256k1fx.TransferOutput{Amt: amt}}
	}
	b := &txs.BaseTx{BaseTx: avax.BaseTx{
		Ins:  []*avax.TransferableInput{in(asset, 1000), in(asset, 500), in(other, 9)},
		Outs: []*avax.TransferableOutput{out(asset, 1400), out(other, 9)},
	}}
	require.Equal(t, uint64(100), Burned(b, asset))
	require.Equal(t, uint64(0), Burned(b, ids.GenerateTestID()))
}
