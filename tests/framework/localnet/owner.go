package localnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"

	"github.com/s-chain/schain/operator/subnet"
)

// OwnerKeyFile is the file, in the network directory, holding the key that
// owns the S-Chain subnet: what `schain validators remove|add|watch` sign
// with on the local network, as an operator's key file would elsewhere.
const OwnerKeyFile = "subnet-owner.key"

// OwnerKeyPath is the file holding the subnet owner's key.
func (n *Network) OwnerKeyPath() string { return filepath.Join(n.Dir, OwnerKeyFile) }

// OwnerKey returns the key tmpnet created the subnet with (one of the
// network's pre-funded keys, so it also pays the fees) and makes sure it is
// in OwnerKeyPath (mode 0600; written on first use, so networks started
// before the file existed get it too).
func (n *Network) OwnerKey() (*secp256k1.PrivateKey, error) {
	s := n.tmp.GetSubnet(SubnetName)
	if s == nil || s.OwningKey == nil {
		return nil, fmt.Errorf("localnet: network %s records no owner key for subnet %q", n.Dir, SubnetName)
	}
	err := subnet.WriteKey(n.OwnerKeyPath(), s.OwningKey)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return s.OwningKey, nil
}
