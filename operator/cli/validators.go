package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/spf13/cobra"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/deploy"
	"github.com/s-chain/schain/operator/eviction"
	"github.com/s-chain/schain/operator/subnet"
)

// keyFileEnv names the environment variable holding the path of the subnet
// owner's key file.
const keyFileEnv = "SCHAIN_SUBNET_KEY_FILE"

// errLiveMember: the validator to remove still heartbeats.
var errLiveMember = errors.New("the validator is a member of S-Chain's current membership (it heartbeats)")

// validatorsFlags are the flags the validators commands share.
type validatorsFlags struct {
	subnet  string
	keyFile string
}

func newValidatorsCmd(g *Globals) *cobra.Command {
	vf := &validatorsFlags{}
	cmd := &cobra.Command{
		Use:   "validators",
		Short: "Show the subnet's validators and their liveness; remove or add one on the P-chain",
		Long: `Show the subnet's validators and their liveness; remove or add one on the
P-chain with the subnet owner's key.

A dead validator loses its ranges by itself after K+1 liveness rounds, but
every range keeps seeing 5, 10 or 15 s block gaps at the heights whose
proposer it was drawn to be, until it is removed from the subnet on the
P-chain ("schain validators remove"). "schain validators watch" does it by
policy. The P-chain API of the first --rpc node that answers is used.

The subnet owner's key comes from --key-file, $` + keyFileEnv + `, or, for the
local network started by "schain-dev network start", its
<network dir>/subnet-owner.key. The file holds PrivateKey-<cb58> or 64
hex digits; keep it mode 0600.

Exit codes as for every schain command, and 8 when a precondition failed
and nothing was issued (not the subnet's owner, not a validator, the last
validator, a live member without --force, not enough AVAX for the fee...).`,
	}
	cmd.PersistentFlags().StringVar(&vf.subnet, "subnet", "", "subnet ID (default: the subnet that validates --chain, asked from the P-chain)")
	cmd.AddCommand(newValidatorsStatusCmd(g, vf), newValidatorsRemoveCmd(g, vf), newValidatorsAddCmd(g, vf), newValidatorsWatchCmd(g, vf))
	return cmd
}

// session is what every validators command works with.
type session struct {
	router   *client.Router
	uri      string // the node whose P-chain API is used
	node     subnet.Node
	subnetID ids.ID
}

func (vf *validatorsFlags) open(ctx context.Context, g *Globals) (*session, error) {
	r, err := g.Router()
	if err != nil {
		return nil, err
	}
	s := &session{router: r}
	var lastErr error
	for _, c := range r.Clients() {
		node := subnet.NewNode(c.URI())
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := node.GetHeight(pctx)
		cancel()
		if err == nil {
			s.uri, s.node = c.URI(), node
			break
		}
		lastErr = fmt.Errorf("%s: %w", c.URI(), err)
	}
	if s.node == nil {
		return nil, fmt.Errorf("%w: no --rpc node answers platform.getHeight (last: %w)", subnet.ErrPChainAPI, lastErr)
	}
	if vf.subnet != "" {
		if s.subnetID, err = ids.FromString(vf.subnet); err != nil {
			return nil, UsageError{fmt.Errorf("--subnet %q: %w", vf.subnet, err)}
		}
		return s, nil
	}
	chainID, err := ids.FromString(g.Chain)
	if err != nil {
		// An alias: the node knows the chain's ID.
		n, err := r.GetNode(ctx)
		if err != nil {
			return nil, err
		}
		chainID = ids.ID(n.ChainID)
	}
	if s.subnetID, err = subnet.SubnetOf(ctx, s.node, chainID); err != nil {
		return nil, err
	}
	return s, nil
}

// admin resolves the owner's key and returns the admin that signs with it.
func (vf *validatorsFlags) admin(g *Globals, s *session) (*subnet.Admin, error) {
	path := vf.keyFile
	if path == "" {
		path = os.Getenv(keyFileEnv)
	}
	if path == "" {
		if path = localOwnerKey(g.Chain); path != "" {
			fmt.Fprintf(g.ErrOut, "using the local network's subnet owner key %s\n", path)
		}
	}
	if path == "" {
		return nil, UsageError{fmt.Errorf("give the subnet owner's key with --key-file FILE (or $%s)", keyFileEnv)}
	}
	key, err := subnet.ReadKey(path)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(g.ErrOut, "warning: key file %s is readable by others (mode %v); chmod 600 it\n", path, info.Mode().Perm())
	}
	return subnet.NewAdmin(s.uri, s.subnetID, key), nil
}

// localOwnerKey is the local network's owner key file if chain is its
// chain (schain-dev only).
func localOwnerKey(chain string) string {
	if dev.LocalOwnerKey == nil {
		return ""
	}
	return dev.LocalOwnerKey(chain)
}

// statusReport is `schain validators status --json`.
type statusReport struct {
	SubnetID   ids.ID               `json:"subnetID"`
	PChain     *subnet.Facts        `json:"pChain"`
	Membership *api.MembershipReply `json:"membership"`
	Standings  []eviction.Standing  `json:"validators"`
}

func newValidatorsStatusCmd(g *Globals, vf *validatorsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "The subnet's validators on the P-chain and in S-Chain's membership view: membership, last heartbeat, how long each is out",
		Long: `The subnet's validators on the P-chain now and in S-Chain's current membership:
whether ranges are pinned to each (member), its last heartbeat, and how long
it has been out of the membership, in liveness rounds and time. S-Chain's
epoch follows the P-chain at ACP-181 epoch boundaries (30 s locally, 5
minutes on mainnet), so a validator just added or removed shows on one side
only for that long.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := g.APIContext(cmd)
			defer cancel()
			s, err := vf.open(ctx, g)
			if err != nil {
				return err
			}
			e, err := s.router.GetMembership(ctx)
			if err != nil {
				return err
			}
			f, err := subnet.Read(ctx, s.node, s.subnetID)
			if err != nil {
				return err
			}
			rep := statusReport{SubnetID: s.subnetID, PChain: f, Membership: e, Standings: eviction.Assess(e, f)}
			return g.Emit(rep, statusFields(rep, time.Now()))
		},
	}
}

func statusFields(rep statusReport, now time.Time) []Field {
	f, e := rep.PChain, rep.Membership
	owners := make([]string, len(f.Owner.Addresses))
	for i, a := range f.Owner.Addresses {
		owners[i] = f.FormatAddress(a)
	}
	kind := "permissioned"
	switch {
	case f.ConversionID != ids.Empty:
		kind = "converted to an L1"
	case f.TransformationTxID != ids.Empty:
		kind = "permissionless"
	}
	roundLen := time.Duration(e.RoundDurationMs) * time.Millisecond
	members := fmt.Sprintf("%d of %d members", len(e.Members), len(e.Validators))
	if e.Fallback {
		members += " (fallback: no recent heartbeat, all validators are members)"
	}
	fs := []Field{
		{"subnet", fmt.Sprintf("%s (%s; owner %s, threshold %d)", f.SubnetID, kind, strings.Join(owners, ", "), f.Owner.Threshold)},
		{"pChain", fmt.Sprintf("height %d, time %s, %d validators", f.Height, f.Time.UTC().Format(time.RFC3339), len(f.Validators))},
		{"membership", fmt.Sprintf("P-chain height %d, liveness round %d (%s each, K=%d): %s", e.PChainHeight, e.Round, roundLen, e.LivenessRounds, members)},
	}
	for _, st := range rep.Standings {
		fs = append(fs, Field{"validator", describeStanding(st, roundLen, now)})
	}
	return fs
}

// describeStanding is one validator's line in `schain validators status`.
func describeStanding(s eviction.Standing, roundLen time.Duration, now time.Time) string {
	var parts []string
	switch {
	case !s.InMembershipView:
		parts = append(parts, "on the P-chain, not yet in S-Chain's membership view")
	case s.Member:
		parts = append(parts, "member")
	case s.OutRounds == 0:
		parts = append(parts, "NOT a member, within its grace after joining")
	default:
		parts = append(parts, fmt.Sprintf("OUT for %d liveness round(s) (%s, since %s)",
			s.OutRounds, s.Out(roundLen), s.OutSince.UTC().Format(time.TimeOnly)))
	}
	if s.InMembershipView && !s.OnPChain {
		parts = append(parts, "removed from the P-chain (S-Chain's membership view drops it at its next ACP-181 epoch)")
	}
	switch {
	case s.LastHeartbeat != nil:
		ago := now.Sub(*s.LastHeartbeatAt).Round(time.Second)
		parts = append(parts, fmt.Sprintf("last heartbeat in round %d (at most %s ago)", *s.LastHeartbeat, ago))
	case s.InMembershipView:
		parts = append(parts, "no heartbeat yet")
	}
	return fmt.Sprintf("%s weight %d: %s", s.NodeID, s.Weight, strings.Join(parts, ", "))
}

// validatorsFailure names the errors of the validators commands and says
// what to do; ok is false for errors of other kinds.
func validatorsFailure(err error) (name, line string, code int, ok bool) {
	type class struct {
		target error
		name   string
		code   int
		hint   string
	}
	for _, c := range []class{
		{deploy.ErrPending, "pending", exitNotReady, "configure the nodes as said, then run the same schain deploy again: it resumes"},
		{deploy.ErrNodes, "nodes_not_ready", exitRefused, "nothing was signed or issued"},
		{deploy.ErrRecord, "record", exitRefused, ""},
		{errDeployUnhealthy, "unhealthy", exitUnavailable, "see the node lines above"},
		{errLiveMember, "live_member", exitRefused, ""},
		{subnet.ErrKeyFile, "key_file", exitUsage, "give the subnet owner's key with --key-file"},
		{subnet.ErrNotOwner, "not_owner", exitRefused, "sign with the key that created the subnet, or its current owner"},
		{subnet.ErrThreshold, "threshold", exitRefused, "this command signs with one key only"},
		{subnet.ErrOwnerLocked, "owner_locked", exitRefused, "retry after the locktime"},
		{subnet.ErrNotPermissioned, "not_permissioned", exitRefused, ""},
		{subnet.ErrNoSubnet, "no_subnet", exitRefused, "check --subnet, or --chain and --rpc"},
		{subnet.ErrNotValidator, "not_validator", exitRefused, "see schain validators status"},
		{subnet.ErrLastValidator, "last_validator", exitRefused, "add another validator first"},
		{subnet.ErrAlreadyValidator, "already_validator", exitRefused, ""},
		{subnet.ErrNotPrimaryValidator, "not_primary_validator", exitRefused, "stake it on the primary network first"},
		{subnet.ErrEndTime, "end_time", exitRefused, "adjust --end"},
		{subnet.ErrOffline, "offline", exitRefused, "start the node first, or pass --force"},
		{subnet.ErrWeight, "weight", exitRefused, "give --weight"},
		{subnet.ErrInsufficientFunds, "insufficient_funds", exitRefused, "fund the key's P-chain address"},
		{eviction.ErrPolicy, "usage", exitUsage, "see schain validators watch --help"},
		{subnet.ErrRejected, "rejected", exitRejected, "the P-chain's reason is above; retrying will not help unless it changes"},
		{subnet.ErrPChainAPI, "unavailable", exitUnavailable, "is the node (--rpc, or deploy's --node) an avalanchego node with its P-chain API, reachable from here?"},
	} {
		if errors.Is(err, c.target) {
			line := err.Error()
			if c.hint != "" {
				line += " (" + c.hint + ")"
			}
			return c.name, line, c.code, true
		}
	}
	return "", "", 0, false
}

func isValidatorsError(err error) bool {
	_, _, _, ok := validatorsFailure(err)
	return ok
}
