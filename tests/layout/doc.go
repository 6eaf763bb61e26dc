// Package layout holds the test that keeps the repository's layout honest:
// what ships (the plugin, the SeaweedFS code inside weed, and the operator's
// schain) links nothing of the test harness (tests/) or the tools (tools/),
// nor the libraries only they need (hashicorp/raft, raft-boltdb,
// gonum/plot, a progress bar). It is for the project's developers; it
// runs with the unit tests (make unit).
package layout
