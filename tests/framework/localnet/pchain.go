package localnet

import (
	"context"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary/common"
)

// AdvancePChain issues one P-chain transaction (a throwaway subnet) with the
// network's pre-funded key, so the P-chain height grows and the next ACP-181
// epoch pins S-Chain to a new height: how tests make the P-chain height change on a
// network whose validator set is otherwise idle.
func (n *Network) AdvancePChain(ctx context.Context) error {
	if len(n.tmp.PreFundedKeys) == 0 {
		return errors.New("localnet: the network has no pre-funded key")
	}
	key := n.tmp.PreFundedKeys[0]
	kc := secp256k1fx.NewKeychain(key)
	w, err := primary.MakeWallet(ctx, n.Nodes[0].URI, kc, kc, primary.WalletConfig{})
	if err != nil {
		return fmt.Errorf("making a P-chain wallet: %w", err)
	}
	_, err = w.P().IssueCreateSubnetTx(&secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{key.Address()}}, common.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("issuing a P-chain transaction: %w", err)
	}
	return nil
}
