package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/api/info"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/gorilla/rpc/v2"
	"github.com/stretchr/testify/require"

	avaapi "github.com/ava-labs/avalanchego/api"
	avajson "github.com/ava-labs/avalanchego/utils/json"
	papi "github.com/ava-labs/avalanchego/vms/platformvm/api"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// fakeNetwork is one node serving S-Chain's getMembership and getNode, the
// P-chain calls subnet.Read makes and info.getNetworkID: enough for every
// validators command up to the point where it would build a transaction.
type fakeNetwork struct {
	uri        string
	chainID    ids.ID
	subnetID   ids.ID
	owner      *secp256k1.PrivateKey
	membership api.MembershipReply
	subnet     []papi.PermissionlessValidator
	primary    []papi.PermissionlessValidator
	now        time.Time
}

const roundMs = 30_000

func u64(v uint64) *uint64 { return &v }

// newFakeNetwork has three subnet validators: live (a member), dead (out
// for 3 rounds) and gone (removed from the P-chain, still in the membership view),
// plus fresh, on the P-chain but not yet in the membership view.
func newFakeNetwork(t *testing.T) (*fakeNetwork, map[string]ids.NodeID) {
	t.Helper()
	key, err := secp256k1.NewPrivateKey()
	require.NoError(t, err)
	// The S-Chain node the commands read through is the live validator,
	// which holds more than 2/3 of the stake: fresh reads count on it.
	schain := apitest.New(t, 1)
	n := map[string]ids.NodeID{"live": ids.NodeID(schain.Nodes[0].ID)}
	for _, name := range []string{"dead", "gone", "fresh", "outsider"} {
		n[name] = ids.GenerateTestNodeID()
	}
	const round = 1000
	f := &fakeNetwork{
		subnetID: ids.GenerateTestID(), owner: key,
		now: time.UnixMilli(round*roundMs + 5_000),
		membership: api.MembershipReply{
			PChainHeight: 40, Round: round, RoundDurationMs: roundMs, LivenessRounds: 1,
			Members: []api.Member{{NodeID: api.NodeID(n["live"]), Weight: 500}},
			Validators: []api.ValidatorLiveness{
				{NodeID: api.NodeID(n["live"]), Weight: 500, Member: true, FirstSeen: u64(1), LastHeartbeat: u64(round)},
				{NodeID: api.NodeID(n["dead"]), Weight: 100, FirstSeen: u64(1), LastHeartbeat: u64(round - 4)},
				{NodeID: api.NodeID(n["gone"]), Weight: 100, FirstSeen: u64(1), LastHeartbeat: u64(round - 9)},
			},
		},
	}
	start := avajson.Uint64(roundMs / 1000)
	end := avajson.Uint64(f.now.Add(24 * time.Hour).Unix())
	// On the P-chain too, the live validator holds more than 2/3 of the
	// stake (fresh reads take their weights from the P-chain).
	for _, name := range []string{"live", "dead", "fresh"} {
		w := uint64(100)
		if name == "live" {
			w = 500
		}
		f.subnet = append(f.subnet, papi.PermissionlessValidator{Staker: papi.Staker{
			NodeID: n[name], Weight: avajson.Uint64(w), StartTime: start, EndTime: end, TxID: ids.GenerateTestID(),
		}})
	}
	for _, name := range []string{"live", "dead", "gone", "fresh", "outsider"} {
		connected := name != "outsider"
		f.primary = append(f.primary, papi.PermissionlessValidator{Staker: papi.Staker{
			NodeID: n[name], Weight: 2000, StartTime: start, EndTime: end + 3600,
		}, Connected: &connected})
	}
	schain.SetMembership(f.membership)
	node := schain.Nodes[0]
	serve := func(path, name string, svc any) {
		s := rpc.NewServer()
		s.RegisterCodec(avajson.NewCodec(), "application/json")
		require.NoError(t, s.RegisterService(svc, name))
		node.Handle(path, s)
	}
	serve("/ext/P", "platform", &fakePlatform{f})
	serve("/ext/info", "info", &fakeInfo{})
	f.uri, f.chainID = node.URI, ids.ID(schain.ChainID)
	return f, n
}

type fakePlatform struct{ f *fakeNetwork }

func (p *fakePlatform) GetHeight(_ *http.Request, _ *struct{}, reply *avaapi.GetHeightResponse) error {
	reply.Height = 41
	return nil
}

func (p *fakePlatform) GetTimestamp(_ *http.Request, _ *struct{}, reply *platformvm.GetTimestampReply) error {
	reply.Timestamp = p.f.now
	return nil
}

func (p *fakePlatform) GetSubnet(_ *http.Request, args *platformvm.GetSubnetArgs, reply *platformvm.GetSubnetResponse) error {
	if args.SubnetID != p.f.subnetID {
		return os.ErrNotExist
	}
	owner, err := address.Format("P", constants.GetHRP(constants.LocalID), p.f.owner.Address().Bytes())
	if err != nil {
		return err
	}
	*reply = platformvm.GetSubnetResponse{IsPermissioned: true, ControlKeys: []string{owner}, Threshold: 1}
	return nil
}

func (p *fakePlatform) GetCurrentValidators(_ *http.Request, args *platformvm.GetCurrentValidatorsArgs, reply *platformvm.GetCurrentValidatorsReply) error {
	set := p.f.subnet
	if args.SubnetID == constants.PrimaryNetworkID {
		set = p.f.primary
	}
	reply.Validators = []any{}
	for _, v := range set {
		if len(args.NodeIDs) == 0 || v.NodeID == args.NodeIDs[0] {
			reply.Validators = append(reply.Validators, v)
		}
	}
	return nil
}

func (p *fakePlatform) ValidatedBy(_ *http.Request, args *platformvm.ValidatedByArgs, reply *platformvm.ValidatedByResponse) error {
	if args.BlockchainID != p.f.chainID {
		return os.ErrNotExist
	}
	reply.SubnetID = p.f.subnetID
	return nil
}

type fakeInfo struct{}

func (*fakeInfo) GetNetworkID(_ *http.Request, _ *struct{}, reply *info.GetNetworkIDReply) error {
	reply.NetworkID = avajson.Uint32(constants.LocalID)
	return nil
}

// keyFile writes k to a 0600 file.
func keyFile(t *testing.T, k *secp256k1.PrivateKey) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "owner.key")
	require.NoError(t, subnet.WriteKey(path, k))
	return path
}

// validators runs `schain --rpc <fake> --chain <fake> validators args...`
// with no key from the environment.
func (f *fakeNetwork) validators(t *testing.T, args ...string) (int, string, string) {
	t.Setenv(keyFileEnv, "")
	return run(t, append([]string{"--rpc", f.uri, "--chain", f.chainID.String(), "validators"}, args...)...)
}

func TestValidatorsStatus(t *testing.T) {
	require := require.New(t)
	f, n := newFakeNetwork(t)
	code, out, errOut := f.validators(t, "status")
	require.Equal(exitOK, code, errOut)
	require.Contains(out, "subnet:     "+f.subnetID.String()+" (permissioned; owner P-local1")
	require.Contains(out, "P-chain height 40, liveness round 1000 (30s each, K=1): 1 of 3 members")
	line := func(id ids.NodeID) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, id.String()) {
				return l
			}
		}
		t.Fatalf("no line for %s in\n%s", id, out)
		return ""
	}
	require.Contains(line(n["live"]), "weight 500: member, last heartbeat in round 1000")
	// Last heartbeat in 996, a member through 997: out in 998, 999, 1000.
	require.Contains(line(n["dead"]), "OUT for 3 liveness round(s) (1m30s, since")
	require.Contains(line(n["gone"]), "removed from the P-chain")
	require.Contains(line(n["fresh"]), "on the P-chain, not yet in S-Chain's membership view")
	require.NotContains(out, n["outsider"].String())

	code, out, errOut = f.validators(t, "status", "--json")
	require.Equal(exitOK, code, errOut)
	var rep statusReport
	require.NoError(json.Unmarshal([]byte(out), &rep))
	require.Equal(f.subnetID, rep.SubnetID)
	require.Len(rep.Standings, 4)
	for _, s := range rep.Standings {
		if s.NodeID == n["dead"] {
			require.Equal(uint64(3), s.OutRounds)
			require.True(s.OnPChain)
		}
	}

	// An explicit --subnet the P-chain does not know.
	code, _, errOut = f.validators(t, "status", "--subnet", ids.GenerateTestID().String())
	require.Equal(exitRefused, code)
	require.Contains(errOut, "no such subnet on the P-chain")
}

func TestValidatorsRemoveRefusals(t *testing.T) {
	f, n := newFakeNetwork(t)
	owner := keyFile(t, f.owner)
	other, err := secp256k1.NewPrivateKey()
	require.NoError(t, err)
	garbage := filepath.Join(t.TempDir(), "garbage.key")
	require.NoError(t, os.WriteFile(garbage, []byte("not a key"), 0o600))

	tests := []struct {
		name string
		args []string
		code int
		line string
	}{
		{"a live member", []string{"remove", n["live"].String(), "--key-file", owner}, exitRefused, "the validator is a member of S-Chain's current membership (it heartbeats)"},
		{"not a validator", []string{"remove", n["gone"].String(), "--key-file", owner}, exitRefused, "not a current validator of the subnet"},
		{"another key", []string{"remove", n["dead"].String(), "--key-file", keyFile(t, other)}, exitRefused, "the key does not control the subnet"},
		{"no key", []string{"remove", n["dead"].String()}, exitUsage, "--key-file"},
		{"a bad key file", []string{"remove", n["dead"].String(), "--key-file", garbage}, exitUsage, "bad key file"},
		{"a bad node ID", []string{"remove", "node-1", "--key-file", owner}, exitUsage, "NODEID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := f.validators(t, tt.args...)
			require.Equal(t, tt.code, code, errOut)
			require.Contains(t, errOut, tt.line)
		})
	}

	// The last validator stays, forced or not.
	f.subnet = f.subnet[:1]
	code, _, errOut := f.validators(t, "remove", n["live"].String(), "--key-file", owner, "--force", "--dry-run")
	require.Equal(t, exitRefused, code)
	require.Contains(t, errOut, "refusing to remove the subnet's last validator")

	// No node answers the P-chain API.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	code, _, errOut = run(t, "--rpc", down.URL, "--chain", f.chainID.String(), "validators", "remove", n["dead"].String(), "--key-file", owner)
	require.Equal(t, exitUnavailable, code)
	require.Contains(t, errOut, "no --rpc node answers platform.getHeight")
}

func TestValidatorsAddRefusals(t *testing.T) {
	f, n := newFakeNetwork(t)
	owner := keyFile(t, f.owner)
	tests := []struct {
		name string
		args []string
		code int
		line string
	}{
		{"already a validator", []string{"add", n["dead"].String()}, exitRefused, "already a validator of the subnet"},
		{"not a primary validator", []string{"add", ids.GenerateTestNodeID().String()}, exitRefused, "not a current validator of the primary network"},
		{"ends after its primary validation", []string{"add", n["gone"].String(), "--end", "87600h"}, exitRefused, "end time out of bounds"},
		{"an unreadable end", []string{"add", n["gone"].String(), "--end", "next week"}, exitUsage, "--end"},
		{"offline", []string{"add", n["outsider"].String()}, exitRefused, "is not connected to the node asked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := f.validators(t, append(tt.args, "--key-file", owner, "--dry-run")...)
			require.Equal(t, tt.code, code, errOut)
			require.Contains(t, errOut, tt.line)
		})
	}
}

func TestValidatorsWatch(t *testing.T) {
	require := require.New(t)
	f, _ := newFakeNetwork(t)
	owner := keyFile(t, f.owner)

	code, _, errOut := f.validators(t, "watch", "--key-file", owner, "--once")
	require.Equal(exitUsage, code)
	require.Contains(errOut, "remove-after")

	// Nobody has been out for 10 rounds: one pass says so and exits.
	code, out, errOut := f.validators(t, "watch", "--key-file", owner, "--remove-after", "10", "--once")
	require.Equal(exitOK, code, errOut)
	require.Contains(out, "removing a validator out of the membership for 10 liveness round(s) (5m0s), keeping at least 2; a pass every 10s")
	require.Contains(out, "liveness round 1000: no validator has been out of the membership for 10 liveness round(s)")

	code, out, errOut = f.validators(t, "watch", "--key-file", owner, "--remove-after", "10", "--once", "--json")
	require.Equal(exitOK, code, errOut)
	var l watchLine
	require.NoError(json.Unmarshal([]byte(out), &l))
	require.Equal(uint64(1000), l.Outcome.Round)
	require.False(l.Outcome.Decision.Remove())

	// A key that does not own the subnet stops the watcher before it starts.
	other, err := secp256k1.NewPrivateKey()
	require.NoError(err)
	code, _, errOut = f.validators(t, "watch", "--key-file", keyFile(t, other), "--remove-after", "1")
	require.Equal(exitRefused, code)
	require.Contains(errOut, "the key does not control the subnet")
}

func TestParseEnd(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	end, err := parseEnd("", now)
	require.NoError(t, err)
	require.True(t, end.IsZero())
	end, err = parseEnd("48h", now)
	require.NoError(t, err)
	require.Equal(t, now.Add(48*time.Hour), end)
	end, err = parseEnd("2030-01-02T03:04:05Z", now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), end.UTC())
	for _, bad := range []string{"-1h", "0s", "tomorrow"} {
		_, err = parseEnd(bad, now)
		require.ErrorAs(t, err, &UsageError{}, bad)
	}
}
