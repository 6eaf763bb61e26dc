package legacyraft

import (
	"io"
	"net"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Stores are the raft storage of one group. Closer, if set, is closed after
// raft shuts down (boltdb files); in-memory stores leave it nil so tests can
// hand the same stores to a restarted node, like a disk surviving a crash.
type Stores struct {
	Logs   raft.LogStore
	Stable raft.StableStore
	Snaps  raft.SnapshotStore
	Closer io.Closer
}

// Options inject the raft plumbing; the zero value means production: TCP
// transports and boltdb under Config.Dir (in-memory stores if Dir is empty).
type Options struct {
	// Transport builds group's raft transport bound at addr.
	Transport func(group int, addr raft.ServerAddress) (raft.Transport, error)
	// Stores returns group's raft stores.
	Stores func(group int) (Stores, error)
	// Logger receives raft and node logs; nil logs errors to stderr.
	Logger hclog.Logger
	// Listener, if set, is where Serve answers HTTP instead of listening on
	// Config.HTTPBind; Serve closes it. A caller that binds its ports before
	// starting nodes (StartLocalCluster) never loses one to another process
	// between choosing and binding it.
	Listener net.Listener
}
