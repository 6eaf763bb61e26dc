package localnet

import (
	"os"
	"testing"

	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/subnet"
)

func TestOwnerKeyIsWrittenOnce(t *testing.T) {
	require := require.New(t)
	key, err := secp256k1.NewPrivateKey()
	require.NoError(err)
	n := &Network{Dir: t.TempDir(), tmp: &tmpnet.Network{Subnets: []*tmpnet.Subnet{{Name: SubnetName, OwningKey: key}}}}

	got, err := n.OwnerKey()
	require.NoError(err)
	require.Equal(key.Address(), got.Address())
	info, err := os.Stat(n.OwnerKeyPath())
	require.NoError(err)
	require.Equal(os.FileMode(0o600), info.Mode().Perm())
	fromFile, err := subnet.ReadKey(n.OwnerKeyPath())
	require.NoError(err)
	require.Equal(key.Address(), fromFile.Address())

	_, err = n.OwnerKey()
	require.NoError(err, "a second call finds the file in place")

	n.tmp.Subnets[0].OwningKey = nil
	_, err = n.OwnerKey()
	require.ErrorContains(err, "no owner key")
}
