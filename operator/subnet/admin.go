package subnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/rpc"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/ava-labs/avalanchego/vms/platformvm/status"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/ava-labs/avalanchego/wallet/chain/p/builder"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary/common"

	walletsigner "github.com/ava-labs/avalanchego/wallet/chain/p/signer"
	pwallet "github.com/ava-labs/avalanchego/wallet/chain/p/wallet"
)

// Issuer is the part of a node's P-chain API that takes and tracks
// transactions.
type Issuer interface {
	IssueTx(ctx context.Context, txBytes []byte, options ...rpc.Option) (ids.ID, error)
	GetTxStatus(ctx context.Context, txID ids.ID, options ...rpc.Option) (*platformvm.GetTxStatusResponse, error)
}

// Action is what a plan does to the subnet's validator set.
type Action string

// The actions of a plan.
const (
	Remove Action = "remove"
	Add    Action = "add"
)

// Plan is a checked, built, unsigned P-chain transaction: what a dry run
// shows and Issue sends.
type Plan struct {
	Action   Action     `json:"action"`
	SubnetID ids.ID     `json:"subnetID"`
	NodeID   ids.NodeID `json:"nodeID"`
	// Weight is the weight removed or added.
	Weight uint64 `json:"weight"`
	// End and PublicKey describe an addition: when the P-chain removes the
	// validator again, and the BLS key it registered on the primary
	// network (the one S-Chain will verify its signatures with).
	End       *time.Time `json:"end,omitempty"`
	PublicKey string     `json:"publicKey,omitempty"`
	// ValidatorsAfter is the size of the subnet's validator set once the
	// transaction is committed.
	ValidatorsAfter int `json:"validatorsAfter"`
	// PChainHeight is the height the checks were made at.
	PChainHeight uint64 `json:"pChainHeight"`
	// Payer is the owner key's address, which pays FeeNAVAX (nano-AVAX).
	Payer    string `json:"payer"`
	FeeNAVAX uint64 `json:"feeNAVAX"`
	// Checks are the preconditions that held, in words.
	Checks []string `json:"checks"`

	utx    txs.UnsignedTx
	wallet pwallet.Wallet
}

// Receipt is a committed plan.
type Receipt struct {
	TxID ids.ID `json:"txID"`
	// PChainHeight is the node's P-chain height once it saw the commit.
	PChainHeight uint64 `json:"pChainHeight"`
}

// Admin changes the subnet's validator set with the owner's key. It keeps
// no state between calls: each plan fetches the facts and the key's UTXOs
// anew, so other wallets spending from the same key do no harm.
type Admin struct {
	uri      string
	node     Node
	issuer   Issuer
	subnetID ids.ID
	key      *secp256k1.PrivateKey
	// PollEvery is how often Issue asks whether the P-chain committed.
	PollEvery time.Duration
}

// NewAdmin manages subnetID through the node at uri with the owner's key.
func NewAdmin(uri string, subnetID ids.ID, key *secp256k1.PrivateKey) *Admin {
	return &Admin{
		uri: uri, node: NewNode(uri), issuer: platformvm.NewClient(uri),
		subnetID: subnetID, key: key, PollEvery: 100 * time.Millisecond,
	}
}

// SubnetID is the subnet the admin manages.
func (a *Admin) SubnetID() ids.ID { return a.subnetID }

// Address is the owner key's P-chain address (unformatted).
func (a *Admin) Address() ids.ShortID { return a.key.Address() }

// Facts reads the subnet's current facts.
func (a *Admin) Facts(ctx context.Context) (*Facts, error) { return Read(ctx, a.node, a.subnetID) }

// Authorize reads the facts and checks that the key may change the
// validator set.
func (a *Admin) Authorize(ctx context.Context) (*Facts, error) {
	f, err := a.Facts(ctx)
	if err != nil {
		return nil, err
	}
	if err := f.Authorize(a.Address()); err != nil {
		return nil, err
	}
	return f, nil
}

// PlanRemove checks that nodeID can be removed and builds the
// RemoveSubnetValidatorTx, without issuing it.
func (a *Admin) PlanRemove(ctx context.Context, nodeID ids.NodeID) (*Plan, error) {
	f, err := a.Authorize(ctx)
	if err != nil {
		return nil, err
	}
	v, err := f.CheckRemove(nodeID)
	if err != nil {
		return nil, err
	}
	w, err := a.wallet(ctx)
	if err != nil {
		return nil, err
	}
	utx, err := w.Builder().NewRemoveSubnetValidatorTx(nodeID, a.subnetID, common.WithContext(ctx))
	if err != nil {
		return nil, a.buildError(f, err)
	}
	p := a.plan(f, w, utx, &utx.BaseTx)
	p.Action, p.NodeID, p.Weight, p.ValidatorsAfter = Remove, nodeID, v.Weight, len(f.Validators)-1
	p.Checks = append(p.Checks,
		fmt.Sprintf("%s validates subnet %s with weight %d since %s", nodeID, a.subnetID, v.Weight, v.Start.UTC().Format(time.RFC3339)),
		fmt.Sprintf("%d of %d validators remain", len(f.Validators)-1, len(f.Validators)))
	return p, nil
}

// PlanAdd checks that the node can be added as asked and builds the
// AddSubnetValidatorTx, without issuing it.
func (a *Admin) PlanAdd(ctx context.Context, req Addition) (*Plan, error) {
	f, err := a.Authorize(ctx)
	if err != nil {
		return nil, err
	}
	primaryVdr, err := ReadPrimary(ctx, a.node, req.NodeID)
	if err != nil {
		return nil, err
	}
	sv, err := f.CheckAdd(req, primaryVdr)
	if err != nil {
		return nil, err
	}
	w, err := a.wallet(ctx)
	if err != nil {
		return nil, err
	}
	utx, err := w.Builder().NewAddSubnetValidatorTx(sv, common.WithContext(ctx))
	if err != nil {
		return nil, a.buildError(f, err)
	}
	end := sv.EndTime()
	p := a.plan(f, w, utx, &utx.BaseTx)
	p.Action, p.NodeID, p.Weight, p.ValidatorsAfter = Add, req.NodeID, sv.Wght, len(f.Validators)+1
	p.End, p.PublicKey = &end, primaryVdr.PublicKey
	key := primaryVdr.PublicKey
	if key == "" {
		key = "none registered"
	}
	connected := "connected"
	switch {
	case primaryVdr.Connected == nil:
		connected = "connection not reported"
	case !*primaryVdr.Connected:
		connected = "NOT connected (added anyway)"
	}
	p.Checks = append(p.Checks,
		fmt.Sprintf("%s validates the primary network until %s (BLS key %s), %s", req.NodeID, primaryVdr.End.UTC().Format(time.RFC3339), key, connected),
		fmt.Sprintf("%s is not yet a validator of subnet %s", req.NodeID, a.subnetID),
		fmt.Sprintf("weight %d until %s, within its primary-network validation", sv.Wght, end.UTC().Format(time.RFC3339)))
	return p, nil
}

// plan fills what every plan shares.
func (a *Admin) plan(f *Facts, w pwallet.Wallet, utx txs.UnsignedTx, base *txs.BaseTx) *Plan {
	fee := Burned(base, w.Builder().Context().AVAXAssetID)
	payer := f.FormatAddress(a.Address())
	return &Plan{
		SubnetID: a.subnetID, PChainHeight: f.Height, Payer: payer, FeeNAVAX: fee,
		Checks: []string{
			fmt.Sprintf("subnet %s is permissioned and its owner (threshold %d) includes the key's address %s", a.subnetID, f.Owner.Threshold, payer),
			fmt.Sprintf("the fee, %d nAVAX, is covered by %s's P-chain balance", fee, payer),
		},
		utx: utx, wallet: w,
	}
}

// wallet fetches the key's P-chain UTXOs and the subnet's owner.
func (a *Admin) wallet(ctx context.Context) (pwallet.Wallet, error) {
	kc := secp256k1fx.NewKeychain(a.key)
	w, err := primary.MakePWallet(ctx, a.uri, kc, primary.WalletConfig{SubnetIDs: []ids.ID{a.subnetID}})
	if err != nil {
		return nil, fmt.Errorf("%w: fetching the key's P-chain UTXOs: %w", ErrPChainAPI, err)
	}
	return w, nil
}

func (a *Admin) buildError(f *Facts, err error) error {
	if errors.Is(err, builder.ErrInsufficientFunds) {
		return fmt.Errorf("%w: %s: %w", ErrInsufficientFunds, f.FormatAddress(a.Address()), err)
	}
	return fmt.Errorf("building the transaction: %w", err)
}

// Burned is what a transaction's AVAX inputs pay beyond its outputs: its
// fee.
func Burned(b *txs.BaseTx, avax ids.ID) uint64 {
	var in, out uint64
	for _, i := range b.Ins {
		if i.AssetID() == avax {
			in += i.Input().Amount()
		}
	}
	for _, o := range b.Outs {
		if o.AssetID() == avax {
			out += o.Output().Amount()
		}
	}
	if out > in {
		return 0
	}
	return in - out
}

// Issue signs the plan's transaction with the owner's key, issues it and
// waits until the P-chain commits it (ErrRejected if the node refuses it
// or the P-chain drops it). If ctx ends first, the transaction may still
// be committed: the error names it.
func (a *Admin) Issue(ctx context.Context, p *Plan) (*Receipt, error) {
	if p.utx == nil || p.wallet == nil {
		return nil, errors.New("subnet: Issue needs a plan from PlanRemove or PlanAdd")
	}
	tx, err := walletsigner.SignUnsigned(ctx, p.wallet.Signer(), p.utx)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return Submit(ctx, a.node, a.issuer, tx.ID(), tx.Bytes(), a.PollEvery)
}

// Submit issues a signed transaction's bytes and waits until the P-chain
// commits it (ErrRejected if the node refuses it or the P-chain drops it;
// ErrPChainAPI if the node cannot be reached), polling every poll (zero:
// 100 ms). txID names it in errors: if ctx ends first, it may still be
// committed.
func Submit(ctx context.Context, node Node, issuer Issuer, txID ids.ID, txBytes []byte, poll time.Duration) (*Receipt, error) {
	if _, err := issuer.IssueTx(ctx, txBytes); err != nil {
		if transportError(err) {
			return nil, fmt.Errorf("%w: platform.issueTx: %w", ErrPChainAPI, err)
		}
		return nil, fmt.Errorf("%w: the node refused %s: %w", ErrRejected, txID, err)
	}
	if err := Await(ctx, issuer, txID, poll); err != nil {
		return nil, err
	}
	h, err := node.GetHeight(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s committed, then platform.getHeight: %w", ErrPChainAPI, txID, err)
	}
	return &Receipt{TxID: txID, PChainHeight: h}, nil
}

// Await polls a transaction's status every poll (zero: 100 ms) until the
// P-chain commits it (nil) or drops it (ErrRejected).
func Await(ctx context.Context, issuer Issuer, txID ids.ID, poll time.Duration) error {
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		st, err := issuer.GetTxStatus(ctx, txID)
		switch {
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("%w: platform.getTxStatus(%s): %w", ErrPChainAPI, txID, err)
		case err != nil:
		case st.Status == status.Committed:
			return nil
		case st.Status == status.Dropped, st.Status == status.Aborted:
			return fmt.Errorf("%w: %s %s: %s", ErrRejected, txID, st.Status, st.Reason)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("transaction %s issued but not yet committed (check with platform.getTxStatus): %w", txID, ctx.Err())
		case <-tick.C:
		}
	}
}

// transportError reports whether err is the connection failing rather
// than the node answering with an error.
func transportError(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}
