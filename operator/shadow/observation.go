package shadow

import (
	"time"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

// Request is what both allocators were asked.
type Request struct {
	Seq   uint64 `json:"seq"`
	Range string `json:"range"`
	Count uint64 `json:"count"`
}

// LegacySide is the legacy allocator's answer to one request. Missing means
// no answer arrived before the caller's deadline; Result and Err are then
// meaningless.
type LegacySide struct {
	Result  legacy.Result
	Err     error
	Latency time.Duration
	Missing bool
}

// SChainSide is S-Chain's answer to one request; see LegacySide.
type SChainSide struct {
	Result  SChainResult
	Err     error
	Latency time.Duration
	Missing bool
}

// Observation is one request with both answers. At is when the exchange
// finished, supplied by the caller: the comparator has no clock.
//
// Observations of one range must be fed in the order the requests were
// issued (the Runner serialises each range); the monotonicity check relies on
// it. Ranges may interleave freely.
type Observation struct {
	Request Request
	At      time.Time
	Legacy  LegacySide
	SChain  SChainSide
}

func (s LegacySide) ok() bool { return !s.Missing && s.Err == nil }

func (s SChainSide) ok() bool { return !s.Missing && s.Err == nil }
