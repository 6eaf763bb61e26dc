package vm

import "github.com/ava-labs/avalanchego/ids"

// ID is S-Chain's fixed VM ID: the plugin binary must be named ID.String()
// (CB58) in the node's plugin directory, and subnets create chains with it.
var ID = ids.ID{'s', 'c', 'h', 'a', 'i', 'n', '-', 'v', 'm'}
