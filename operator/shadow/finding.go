package shadow

import "time"

// Kind names one kind of finding.
type Kind string

// Finding kinds. Their Class decides what they do to the gate.
const (
	// KindCountMismatch: a side returned a count other than requested, or
	// the sides disagree on it.
	KindCountMismatch Kind = "count_mismatch"
	// KindOutcomeMismatch: one side succeeded and the other failed.
	KindOutcomeMismatch Kind = "outcome_mismatch"
	// KindMissing: a side gave no answer before the deadline.
	KindMissing Kind = "missing"
	// KindLate: a side answered, but slower than Config.LateAfter.
	KindLate Kind = "late"
	// KindSChainOverlap: S-Chain issued an id it had issued before.
	KindSChainOverlap Kind = "schain_overlap"
	// KindSChainNonMonotonic: an S-Chain base went below the range's
	// previous end without overlapping (a counter moved down).
	KindSChainNonMonotonic Kind = "schain_non_monotonic"
	// KindLegacyDuplicate: the legacy issued an id twice within one leader
	// term, which not even its known defect explains.
	KindLegacyDuplicate Kind = "legacy_duplicate"
	// KindLegacyReissue: the legacy reissued ids issued under an earlier
	// term: the known defect of a non-durable counter.
	KindLegacyReissue Kind = "legacy_reissue"
	// KindTrackingTruncated: bounded memory made interval tracking of a
	// range coarser (or dropped a range); overlap findings on it may then
	// include ids never issued to it.
	KindTrackingTruncated Kind = "tracking_truncated"
)

// Class groups kinds by consequence.
type Class string

const (
	// ClassDisagreement: the two sides behaved differently; resets the gate.
	ClassDisagreement Class = "disagreement"
	// ClassSChainViolation: S-Chain broke its own guarantee; resets the
	// gate and, with GateConfig.BlockOnViolation, blocks cutover for good.
	ClassSChainViolation Class = "schain_violation"
	// ClassLegacyAnomaly: the legacy misbehaved in a way its known defects do
	// not explain, so the comparison itself is suspect; resets the gate.
	ClassLegacyAnomaly Class = "legacy_anomaly"
	// ClassLegacyDefect: evidence of the known legacy defect that cutover
	// fixes; recorded, does not reset the gate.
	ClassLegacyDefect Class = "legacy_defect"
	// ClassNotice: about the comparison's own fidelity; does not reset.
	ClassNotice Class = "notice"
)

// Class returns the class of k.
func (k Kind) Class() Class {
	switch k {
	case KindCountMismatch, KindOutcomeMismatch, KindMissing, KindLate:
		return ClassDisagreement
	case KindSChainOverlap, KindSChainNonMonotonic:
		return ClassSChainViolation
	case KindLegacyDuplicate:
		return ClassLegacyAnomaly
	case KindLegacyReissue:
		return ClassLegacyDefect
	default:
		return ClassNotice
	}
}

// ResetsGate reports whether a finding of class c restarts the clean window.
func (c Class) ResetsGate() bool {
	return c == ClassDisagreement || c == ClassSChainViolation || c == ClassLegacyAnomaly
}

// Side names which allocator a finding is about.
type Side string

// Sides.
const (
	SideLegacy Side = "legacy"
	SideSChain Side = "schain"
	SideBoth   Side = "both"
)

// Finding is one detected divergence, with enough context to investigate.
type Finding struct {
	Seq    uint64    `json:"seq"`
	Range  string    `json:"range"`
	Kind   Kind      `json:"kind"`
	Class  Class     `json:"class"`
	Side   Side      `json:"side"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail"`
}
