package localnet

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/config"
	nodeconfig "github.com/ava-labs/avalanchego/config/node"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/stretchr/testify/require"
)

// TestStopPassesOverADeadNode (issue 43): after a node was killed, stopping
// the network failed on it ("failed to stop node …: connection refused")
// and left the network behind. Stop passes over a node whose process is
// gone, without asking its API anything, and forgets its process.
func TestStopPassesOverADeadNode(t *testing.T) {
	require := require.New(t)
	dead := exec.Command("true")
	require.NoError(dead.Run()) // started, exited and reaped: its pid is gone
	dir := t.TempDir()
	pc, err := json.Marshal(nodeconfig.ProcessContext{PID: dead.Process.Pid, URI: "http://127.0.0.1:1"})
	require.NoError(err)
	path := filepath.Join(dir, config.DefaultProcessContextFilename)
	require.NoError(os.WriteFile(path, pc, 0o644))
	n := &Network{tmp: &tmpnet.Network{Nodes: []*tmpnet.Node{{NodeID: ids.GenerateTestNodeID(), DataDir: dir}}}}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(n.Stop(ctx))
	_, err = os.Stat(path)
	require.ErrorIs(err, os.ErrNotExist, "the dead node's process is forgotten")
}
