package legacyraft

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// TestShutdownNoiseIsDropped: the transport's error for a command in
// flight at shutdown is not logged (make run ended with it); other errors
// are.
func TestShutdownNoiseIsDropped(t *testing.T) {
	require.True(t, shutdownNoise(hclog.Error, "failed to decode incoming command", "error", raft.ErrTransportShutdown))
	require.True(t, shutdownNoise(hclog.Error, "failed to decode incoming command", "error", fmt.Errorf("wrapped: %w", raft.ErrTransportShutdown)))
	require.False(t, shutdownNoise(hclog.Error, "failed to decode incoming command", "error", raft.ErrPipelineShutdown))
	require.False(t, shutdownNoise(hclog.Error, "failed to append to log"))
}
