package history

import (
	"fmt"
	"math"
	"sync"
)

// Clock returns monotonic nanoseconds: never less than what it returned
// before.
type Clock func() int64

// Status is how an operation ended.
type Status int

const (
	// Pending: invoked, never completed (checked as Info).
	Pending Status = iota
	// Ok: succeeded with a result.
	Ok
	// Failed: certainly did not take effect.
	Failed
	// Unknown (Info): may or may not have taken effect.
	Unknown
)

func (s Status) String() string {
	switch s {
	case Pending:
		return "pending"
	case Ok:
		return "ok"
	case Failed:
		return "fail"
	case Unknown:
		return "info"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Operation is one recorded operation. Return is the completion time; the
// checkers treat an operation that is Pending or Unknown as never returning.
type Operation struct {
	ID     int
	Client int
	Input  Input
	Call   int64
	Return int64
	Status Status
	Result Result // with Ok
	Err    string // with Failed and Unknown
}

func (o Operation) String() string {
	out := o.Status.String()
	switch o.Status {
	case Ok:
		out = o.Result.String()
	case Failed, Unknown:
		out = fmt.Sprintf("%s (%s)", o.Status, o.Err)
	}
	return fmt.Sprintf("#%d client %d [%d, %s] %v -> %s", o.ID, o.Client, o.Call, o.returnText(), o.Input, out)
}

func (o Operation) returnText() string {
	if o.open() {
		return "open"
	}
	return fmt.Sprint(o.Return)
}

// open reports whether the operation may take effect at any later time.
func (o Operation) open() bool { return o.Status == Pending || o.Status == Unknown }

// end is the latest time the operation can take effect at.
func (o Operation) end() int64 {
	if o.open() {
		return math.MaxInt64
	}
	return o.Return
}

// before reports whether o certainly took effect (if at all) before p did.
func (o Operation) before(p Operation) bool { return o.end() < p.Call }

// History is every operation a run recorded, indexed by ID.
type History []Operation

// Recorder records a history. It is safe for concurrent use.
type Recorder struct {
	clock Clock
	mu    sync.Mutex
	ops   []Operation
}

// NewRecorder records with clock.
func NewRecorder(clock Clock) *Recorder { return &Recorder{clock: clock} }

// Handle completes one invoked operation, exactly once.
type Handle struct {
	r  *Recorder
	id int
}

// Invoke records that client is about to send in.
func (r *Recorder) Invoke(client int, in Input) Handle {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := len(r.ops)
	r.ops = append(r.ops, Operation{ID: id, Client: client, Input: in, Call: r.clock()})
	return Handle{r: r, id: id}
}

// Ok records that the operation succeeded with res, which must be a result
// of the operation's kind.
func (h Handle) Ok(res Result) {
	h.r.complete(h.id, Ok, res, "")
}

// Fail records that the operation certainly did not take effect.
func (h Handle) Fail(err error) { h.r.complete(h.id, Failed, nil, errText(err)) }

// Info records that the operation may or may not have taken effect.
func (h Handle) Info(err error) { h.r.complete(h.id, Unknown, nil, errText(err)) }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// complete panics on a second completion or a result of the wrong kind:
// both are bugs of the client, not of the system under test.
func (r *Recorder) complete(id int, s Status, res Result, err string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := &r.ops[id]
	if op.Status != Pending {
		panic(fmt.Sprintf("history: operation %d completed twice", id))
	}
	if s == Ok && (res == nil || !op.Input.fits(res)) {
		panic(fmt.Sprintf("history: %v cannot answer %v", res, op.Input))
	}
	op.Status, op.Result, op.Err, op.Return = s, res, err, r.clock()
}

// History returns a copy of what was recorded so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(History(nil), r.ops...)
}
