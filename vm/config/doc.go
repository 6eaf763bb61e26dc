// Package config holds a chain's two configurations: the genesis
// (consensus rules and resource bounds every node of the chain shares,
// fixed at creation) and a node's chain config (its API access control and
// abuse limits, which each operator sets). Both overlay JSON on defaults,
// refuse unknown fields and are verified before use, so a typo never falls
// back to a default silently.
package config
