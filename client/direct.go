package client

import (
	"context"
	"fmt"
)

// DirectURIs returns, for each node URI in order, the base URI at which the
// node's plugin serves the API itself (getNode's directURI, chain config
// directAPI), or the node URI when it serves none. A Router over the
// result reaches the same API without the node's HTTP server and
// rpcchainvm's hop into the plugin, which is most of what a pooled
// allocation costs. A node restarted with directAPI port 0 listens on a new
// port: ask again after a restart (or give the node a fixed port).
func DirectURIs(ctx context.Context, nodeURIs []string, chainID string, cfg Config) ([]string, error) {
	out := make([]string, len(nodeURIs))
	for i, uri := range nodeURIs {
		c, err := New(uri, chainID, cfg)
		if err != nil {
			return nil, err
		}
		n, err := c.GetNode(ctx)
		if err != nil {
			return nil, fmt.Errorf("asking %s for its direct API: %w", uri, err)
		}
		out[i] = uri
		if n.DirectURI != "" {
			out[i] = n.DirectURI
		}
	}
	return out, nil
}
