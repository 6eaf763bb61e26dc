package localnet

import (
	"encoding/base64"
	"fmt"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls/signer/localsigner"
)

// SignerKey is a node's BLS signing key (the one the P-chain holds for
// it): what its certificate signatures are made with. Fault tests sign
// with it what a validator gone rogue would.
func (n *Network) SignerKey(id ids.NodeID) (*localsigner.LocalSigner, error) {
	nd, err := n.node(id)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(nd.Flags[config.StakingSignerKeyContentKey])
	if err != nil {
		return nil, fmt.Errorf("the signing key of %s: %w", id, err)
	}
	return localsigner.FromBytes(b)
}

// DataDir is where a node keeps its database and logs; its database is
// DataDir/db (every chain's, S-Chain's included).
func (n *Network) DataDir(id ids.NodeID) (string, error) {
	nd, err := n.node(id)
	if err != nil {
		return "", err
	}
	return nd.DataDir, nil
}
