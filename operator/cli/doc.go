// Package cli is the operator's command line: every command of the schain
// binary (cmd/schain) an operator installs: the API commands (allocate,
// put-manifest, receipt, owner, membership, alloc, manifest, manifests,
// node, lease), verify, deploy, token, validators (status, remove, add,
// watch), shadow run against a legacy allocator of your own (real
// SeaweedFS masters), and seaweedfs shadow, cutover and rollback of a
// SeaweedFS cluster of your own.
//
// It is for operators; it links no test harness (tests/framework) and no
// tools (tools/). The development binary (tools/cmd/schain-dev) runs the
// same commands with Develop's additions: the local network and SeaweedFS
// cluster as defaults, the legacy raft stand-in, progress bars and plots,
// and its own commands (network, demo, bench, legacy, seaweedfs
// up|down|status|demo|bench|bench-stores).
package cli
