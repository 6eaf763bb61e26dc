package history

import "fmt"

// Input is what a client asked for: one of the operation types of this
// package (Get, Put, PutIfAbsent, PutIfVersion, Delete, List, Allocate,
// ReadCounter, Acquire, Renew, Release).
type Input interface {
	fmt.Stringer
	// fits reports whether res is a result of this kind of operation.
	fits(res Result) bool
}

// Result is what an operation answered when it succeeded (Ok): one of
// GetResult, WriteResult, ListResult, Allocation, CounterValue, Grant and
// ReleaseResult.
type Result interface {
	fmt.Stringer
	result()
}

// Get reads one key.
type Get struct{ Key string }

// Put writes Value at Key unconditionally.
type Put struct{ Key, Value string }

// PutIfAbsent writes Value at Key only if the key is absent.
type PutIfAbsent struct{ Key, Value string }

// PutIfVersion writes Value at Key only if the key is live at Version.
type PutIfVersion struct {
	Key, Value string
	Version    uint64
}

// Delete makes Key absent.
type Delete struct{ Key string }

// List returns every live key under Prefix with its value.
type List struct{ Prefix string }

// Allocate takes Count ids from Counter.
type Allocate struct {
	Counter string
	Count   uint64
}

// ReadCounter reads the next id Counter will issue.
type ReadCounter struct{ Counter string }

// Acquire asks for the lease of Range for Holder.
type Acquire struct{ Range, Holder string }

// Renew extends Holder's grant Token of Range.
type Renew struct {
	Range, Holder string
	Token         uint64
}

// Release ends Holder's grant Token of Range.
type Release struct {
	Range, Holder string
	Token         uint64
}

// GetResult answers a Get: Found with Value at Version (0: not reported),
// or not found.
type GetResult struct {
	Found   bool
	Value   string
	Version uint64
}

// WriteResult answers a put or a delete: Applied tells whether the write took
// effect (false: a condition failed; a delete of an absent key may answer
// either); Version is the key's new version (0: not reported).
type WriteResult struct {
	Applied bool
	Version uint64
}

// Entry is one key of a listing.
type Entry struct{ Key, Value string }

// ListResult answers a List.
type ListResult struct{ Entries []Entry }

// Allocation answers an Allocate: the ids [Base, Base+Count).
type Allocation struct{ Base, Count uint64 }

// CounterValue answers a ReadCounter: the next id the counter issues.
type CounterValue struct{ Next uint64 }

// Grant answers an Acquire or a Renew that was granted: Holder holds the
// lease with fencing Token from GrantMs (the deciding block's time:
// api.LeaseReply's ExpiresMs less the TTL asked for) until ExpiresMs,
// exclusive (state.Lease.Held). A refusal (held, lost) is a Fail.
type Grant struct {
	Holder             string
	Token              uint64
	GrantMs, ExpiresMs uint64
}

// ReleaseResult answers a Release: the grant ended at AtMs (the deciding
// block's time).
type ReleaseResult struct{ AtMs uint64 }

func (GetResult) result()     {}
func (WriteResult) result()   {}
func (ListResult) result()    {}
func (Allocation) result()    {}
func (CounterValue) result()  {}
func (Grant) result()         {}
func (ReleaseResult) result() {}

func (o Get) String() string { return fmt.Sprintf("get(%q)", o.Key) }
func (o Put) String() string { return fmt.Sprintf("put(%q, %q)", o.Key, o.Value) }
func (o PutIfAbsent) String() string {
	return fmt.Sprintf("putIfAbsent(%q, %q)", o.Key, o.Value)
}
func (o PutIfVersion) String() string {
	return fmt.Sprintf("putIfVersion(%q, %q, v%d)", o.Key, o.Value, o.Version)
}
func (o Delete) String() string      { return fmt.Sprintf("delete(%q)", o.Key) }
func (o List) String() string        { return fmt.Sprintf("list(%q)", o.Prefix) }
func (o Allocate) String() string    { return fmt.Sprintf("allocate(%q, %d)", o.Counter, o.Count) }
func (o ReadCounter) String() string { return fmt.Sprintf("readCounter(%q)", o.Counter) }
func (o Acquire) String() string     { return fmt.Sprintf("acquire(%q, %q)", o.Range, o.Holder) }
func (o Renew) String() string {
	return fmt.Sprintf("renew(%q, %q, token %d)", o.Range, o.Holder, o.Token)
}
func (o Release) String() string {
	return fmt.Sprintf("release(%q, %q, token %d)", o.Range, o.Holder, o.Token)
}

func (r GetResult) String() string {
	if !r.Found {
		return "not found"
	}
	return fmt.Sprintf("%q v%d", r.Value, r.Version)
}
func (r WriteResult) String() string {
	if !r.Applied {
		return "not applied"
	}
	return fmt.Sprintf("applied v%d", r.Version)
}
func (r ListResult) String() string   { return fmt.Sprintf("%d entries %v", len(r.Entries), r.Entries) }
func (r Allocation) String() string   { return fmt.Sprintf("[%d, %d)", r.Base, r.Base+r.Count) }
func (r CounterValue) String() string { return fmt.Sprintf("next %d", r.Next) }
func (r Grant) String() string {
	return fmt.Sprintf("%q token %d [%d, %d) ms", r.Holder, r.Token, r.GrantMs, r.ExpiresMs)
}
func (r ReleaseResult) String() string { return fmt.Sprintf("released at %d ms", r.AtMs) }

func isA[T Result](res Result) bool {
	_, ok := res.(T)
	return ok
}

func (Get) fits(res Result) bool          { return isA[GetResult](res) }
func (Put) fits(res Result) bool          { return isA[WriteResult](res) }
func (PutIfAbsent) fits(res Result) bool  { return isA[WriteResult](res) }
func (PutIfVersion) fits(res Result) bool { return isA[WriteResult](res) }
func (Delete) fits(res Result) bool       { return isA[WriteResult](res) }
func (List) fits(res Result) bool         { return isA[ListResult](res) }
func (Allocate) fits(res Result) bool     { return isA[Allocation](res) }
func (ReadCounter) fits(res Result) bool  { return isA[CounterValue](res) }
func (Acquire) fits(res Result) bool      { return isA[Grant](res) }
func (Renew) fits(res Result) bool        { return isA[Grant](res) }
func (Release) fits(res Result) bool      { return isA[ReleaseResult](res) }
