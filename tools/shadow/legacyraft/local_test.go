package legacyraft_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

func TestLocalCluster(t *testing.T) {
	for _, mode := range []legacyraft.Mode{legacyraft.ModeSeaweedFS, legacyraft.ModeReplicated} {
		t.Run(string(mode), func(t *testing.T) {
			require := require.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := legacyraft.StartLocalCluster(ctx, 3, mode, t.TempDir())
			require.NoError(err)
			cl := legacyraft.NewClient(c.Addrs(), 2*time.Second)
			a, err := cl.Allocate(ctx, "r", 5)
			require.NoError(err)
			b, err := cl.Allocate(ctx, "r", 5)
			require.NoError(err)
			require.GreaterOrEqual(b.First, a.First+5, "ids move forward")
			require.NoError(c.Close())
		})
	}
}
