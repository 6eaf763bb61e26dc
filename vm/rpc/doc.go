// Package rpc is a validator's JSON-RPC API (service "schain"): what the Go
// client, the CLIs and the SeaweedFS patch call. It is for the VM, which
// serves it at /ext/bc/<chainID> through the node and, with the chain
// config's directAPI, on a listener of its own (direct.go).
//
// The methods hand writes to the node's write path (Writes: package
// writer) and answer reads from accepted state (Reads: package chain),
// never from state a node cannot vouch for: every read names the node's
// last accepted block, takes a least height, and is refused while the node
// bootstraps or lags its peers (fresh.go). Tokens and their scopes guard
// every method that makes the validator sign (access.go); errors carry the
// codes of package errcode. docs/using/api.md is the reference a caller
// reads.
package rpc
