package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/fx"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	pbuilder "github.com/ava-labs/avalanchego/wallet/chain/p/builder"
	psigner "github.com/ava-labs/avalanchego/wallet/chain/p/signer"
	pwallet "github.com/ava-labs/avalanchego/wallet/chain/p/wallet"
	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"

	"github.com/s-chain/schain/operator/subnet"
)

// builder signs a deployment's transactions one after the other, each
// spending the change of the one before: the wallet's backend takes each
// as accepted once built, so the subnet's owner and the new outputs are
// known to the next before anything is issued. That is what fixes the
// subnet and chain IDs (the IDs of their transactions) before the first
// transaction leaves, and lets a resumed deployment issue the same bytes.
type builder struct {
	key     *secp256k1.PrivateKey
	backend pwallet.Backend
	build   pbuilder.Builder
	sign    psigner.Signer
	avax    ids.ID
}

// newBuilder starts from the key's P-chain UTXOs as the endpoint has them;
// owners are the subnets already created (a resumed deployment's).
func newBuilder(ctx context.Context, e Endpoint, key *secp256k1.PrivateKey, owners map[ids.ID]fx.Owner) (*builder, error) {
	addrs := set.Of(key.Address())
	pctx, utxos, err := e.WalletState(ctx, addrs)
	if err != nil {
		return nil, fmt.Errorf("%w: fetching the key's P-chain UTXOs: %w", subnet.ErrPChainAPI, err)
	}
	backend := pwallet.NewBackend(walletcommon.NewChainUTXOs(constants.PlatformChainID, utxos), owners)
	return &builder{
		key: key, backend: backend, avax: pctx.AVAXAssetID,
		build: pbuilder.New(addrs, pctx, backend),
		sign:  psigner.New(secp256k1fx.NewKeychain(key), backend),
	}, nil
}

// step signs utx and takes it as accepted.
func (b *builder) step(ctx context.Context, kind Kind, utx txs.UnsignedTx, base *txs.BaseTx) (Step, error) {
	tx, err := psigner.SignUnsigned(ctx, b.sign, utx)
	if err != nil {
		return Step{}, fmt.Errorf("signing the %s transaction: %w", kind, err)
	}
	if err := b.backend.AcceptTx(ctx, tx); err != nil {
		return Step{}, fmt.Errorf("chaining the %s transaction: %w", kind, err)
	}
	hex, err := formatting.Encode(formatting.Hex, tx.Bytes())
	if err != nil {
		return Step{}, err
	}
	return Step{Kind: kind, TxID: tx.ID(), Tx: hex, FeeNAVAX: subnet.Burned(base, b.avax), State: Signed}, nil
}

func (b *builder) createSubnet(ctx context.Context) (Step, error) {
	owner := &secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{b.key.Address()}}
	utx, err := b.build.NewCreateSubnetTx(owner, walletcommon.WithContext(ctx))
	if err != nil {
		return Step{}, buildError(b.key, CreateSubnet, err)
	}
	return b.step(ctx, CreateSubnet, utx, &utx.BaseTx)
}

func (b *builder) addValidator(ctx context.Context, v *txs.SubnetValidator) (Step, error) {
	utx, err := b.build.NewAddSubnetValidatorTx(v, walletcommon.WithContext(ctx))
	if err != nil {
		return Step{}, buildError(b.key, AddValidator, err)
	}
	s, err := b.step(ctx, AddValidator, utx, &utx.BaseTx)
	s.NodeID = v.NodeID
	return s, err
}

func (b *builder) createChain(ctx context.Context, subnetID ids.ID, genesis []byte, vmID ids.ID, name string) (Step, error) {
	utx, err := b.build.NewCreateChainTx(subnetID, genesis, vmID, nil, name, walletcommon.WithContext(ctx))
	if err != nil {
		return Step{}, buildError(b.key, CreateChain, err)
	}
	return b.step(ctx, CreateChain, utx, &utx.BaseTx)
}

func buildError(key *secp256k1.PrivateKey, kind Kind, err error) error {
	if errors.Is(err, pbuilder.ErrInsufficientFunds) {
		return fmt.Errorf("%w: building the %s transaction (key address %s): %w", subnet.ErrInsufficientFunds, kind, key.Address(), err)
	}
	return fmt.Errorf("building the %s transaction: %w", kind, err)
}

// validator is the subnet validation of a node: weight, and the P-chain's
// checks of an addition (a primary validator, connected, an end within
// its primary validation). The P-chain starts it at commit.
func validator(subnetID ids.ID, networkID uint32, pTime time.Time, f NodeFacts, weight uint64) (*txs.SubnetValidator, error) {
	facts := &subnet.Facts{NetworkID: networkID, SubnetID: subnetID, Time: pTime}
	return facts.CheckAdd(subnet.Addition{NodeID: f.NodeID, Weight: weight}, f.Primary)
}
