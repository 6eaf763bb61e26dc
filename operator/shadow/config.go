package shadow

import (
	"errors"
	"time"
)

var (
	errBadLimit  = errors.New("memory limits must be positive")
	errBadWindow = errors.New("gate window must be positive")
	errNegative  = errors.New("durations must not be negative")
)

// Config bounds the comparator's memory and sets the cutover gate.
type Config struct {
	// LateAfter flags an answer slower than this as late (a disagreement);
	// 0 disables the check.
	LateAfter time.Duration `json:"late-after"`
	// MaxIntervalsPerRange caps tracked id intervals per range and side;
	// beyond it tracking coarsens and a tracking_truncated notice is raised.
	MaxIntervalsPerRange int `json:"max-intervals-per-range"`
	// MaxRanges caps the ranges tracked; further ranges are compared for
	// counts and outcomes only, and reported.
	MaxRanges int `json:"max-ranges"`
	// LegacySharedKeySpace tracks legacy ids in one key space for all
	// ranges, as the SeaweedFS sequencer issues them; a reissue of an id
	// first given to another range is then still caught. Off, legacy ids
	// are tracked per range.
	LegacySharedKeySpace bool `json:"legacy-shared-key-space"`
	// LegacyOwnKeySpace lists ranges whose legacy ids stay in a key space
	// of their own with LegacySharedKeySpace on: SeaweedFS volume ids, which
	// raft issues beside the global file-key sequencer.
	LegacyOwnKeySpace []string `json:"legacy-own-key-space,omitempty"`
	// MaxExamples is how many findings of each kind the report keeps.
	MaxExamples int `json:"max-examples"`
	// Gate decides readiness.
	Gate GateConfig `json:"gate"`
}

// GateConfig is the clean window cutover requires.
type GateConfig struct {
	// MinRequests and MinDuration must both be reached by one window of
	// observations without a gate-resetting finding.
	MinRequests uint64        `json:"min-requests"`
	MinDuration time.Duration `json:"min-duration"`
	// BlockOnViolation keeps the gate closed for good after any S-Chain
	// violation: a duplicate id is a broken invariant, not noise.
	BlockOnViolation bool `json:"block-on-violation"`
}

// DefaultConfig suits a production shadow run: 10,000 clean requests over at
// least 10 minutes, a second counts as late.
func DefaultConfig() Config {
	return Config{
		LateAfter:            time.Second,
		MaxIntervalsPerRange: 1024,
		MaxRanges:            100_000,
		MaxExamples:          5,
		Gate: GateConfig{
			MinRequests:      10_000,
			MinDuration:      10 * time.Minute,
			BlockOnViolation: true,
		},
	}
}

// Validate checks the limits; NewComparator calls it.
func (c Config) Validate() error {
	if c.MaxIntervalsPerRange < 2 || c.MaxRanges < 1 || c.MaxExamples < 0 {
		return errBadLimit
	}
	if c.Gate.MinRequests == 0 {
		return errBadWindow
	}
	if c.LateAfter < 0 || c.Gate.MinDuration < 0 {
		return errNegative
	}
	return nil
}
