package schainseq

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Pair kinds.
const (
	// KindKey: a file-key allocation (Range is the volume's key range).
	KindKey = "key"
	// KindVolume: a volume-id allocation (Range is the volume range).
	KindVolume = "volume"
	// KindState: the master's counters (see Pair.State); no pair.
	KindState = "state"
)

// PairsFile is the name of the current pairs file in the pairs directory;
// the previous one is PairsFile + ".1".
const PairsFile = "pairs.jsonl"

// Pair is one mirrored allocation, a line of the pairs file: what the stock
// allocator answered and what S-Chain answered to the same request.
type Pair struct {
	// Seq numbers the master process's allocations in the stock
	// sequencer's order (1, 2, ...; dropped mirrors leave gaps). Compared in
	// Seq order, a process's pairs follow the stock keys, and, one worker per
	// range serving first in first out, each range's S-Chain answers too.
	Seq uint64 `json:"seq"`
	// Issued is when the stock sequencer answered (it orders the processes
	// of one cluster: leaders follow each other); At when the S-Chain side
	// ended (answer, error or timeout).
	Issued time.Time `json:"issued"`
	At     time.Time `json:"at"`
	// Master is the master's address; Term identifies its process (the
	// start time in Unix nanoseconds): one process's stock sequencer never
	// goes back, so a key issued twice under one term is a duplicate, across
	// terms a reissue.
	Master string `json:"master"`
	Term   uint64 `json:"term"`
	Kind   string `json:"kind"`
	Range  string `json:"range,omitempty"`
	Volume uint32 `json:"volume,omitempty"`
	// Legacy is the stock answer: ids [First, First+Count).
	Legacy *LegacyAnswer `json:"legacy,omitempty"`
	// SChain is S-Chain's answer; nil when it failed (Error) or gave none
	// within the mirror's bound (Missing).
	SChain  *Reservation `json:"schain,omitempty"`
	Error   string       `json:"error,omitempty"`
	Missing bool         `json:"missing,omitempty"`
	// SChainNS is how long S-Chain took; QueuedNS how long the mirror
	// waited in the queue before it was sent.
	SChainNS int64 `json:"schain_ns,omitempty"`
	QueuedNS int64 `json:"queued_ns,omitempty"`
	// Batch is how many allocations of the range one S-Chain request
	// mirrored together (SChain is this allocation's share of its answer).
	Batch int `json:"batch,omitempty"`
	// State is set on KindState lines: the counters, written every second
	// while they change and every minute otherwise.
	State *ShadowState `json:"state,omitempty"`
}

// LegacyAnswer is the stock allocator's answer.
type LegacyAnswer struct {
	First uint64 `json:"first"`
	Count uint64 `json:"count"`
	// NS is how long the stock sequencer took.
	NS int64 `json:"ns"`
}

// ShadowState is a shadow master's counters since it started.
type ShadowState struct {
	// Offered mirrors, Dropped because the queue was full, Mirrored with an
	// S-Chain answer, Failed with an error or none in time.
	Offered  uint64 `json:"offered"`
	Dropped  uint64 `json:"dropped"`
	Mirrored uint64 `json:"mirrored"`
	Failed   uint64 `json:"failed"`
	// Unrouted keys were handed out without a volume (never, with the
	// patched topology) and so not mirrored.
	Unrouted uint64 `json:"unrouted"`
	// LegacyMaxKey is the highest key the stock sequencer handed out,
	// dropped mirrors included; HeartbeatMaxKey the highest key volume
	// servers reported written; MaxVolumeID the highest volume id issued.
	LegacyMaxKey    uint64 `json:"legacy_max_key"`
	HeartbeatMaxKey uint64 `json:"heartbeat_max_key"`
	MaxVolumeID     uint32 `json:"max_volume_id"`
}

// pairWriter appends pairs to the pairs file from one goroutine, flushing
// every flushEvery and rotating at maxBytes.
type pairWriter struct {
	dir      string
	maxBytes int64
	in       chan Pair
	done     chan struct{}
	logf     func(string, ...any)

	f       *os.File
	w       *bufio.Writer
	written int64
}

const flushEvery = 200 * time.Millisecond

func newPairWriter(dir string, maxBytes int64, logf func(string, ...any)) (*pairWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("schain-shadow pairs directory: %w", err)
	}
	w := &pairWriter{dir: dir, maxBytes: maxBytes, in: make(chan Pair, 4096), done: make(chan struct{}), logf: logf}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *pairWriter) path() string { return filepath.Join(w.dir, PairsFile) }

func (w *pairWriter) open() error {
	f, err := os.OpenFile(w.path(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("schain-shadow pairs file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	w.f, w.w, w.written = f, bufio.NewWriterSize(f, 64<<10), st.Size()
	return nil
}

// run writes until in is closed; state is called for each KindState line.
func (w *pairWriter) run(state func() ShadowState, master string, term uint64) {
	defer close(w.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	var last ShadowState
	lastAt := time.Time{}
	for {
		select {
		case p, ok := <-w.in:
			if !ok {
				s := state()
				w.write(Pair{At: time.Now(), Master: master, Term: term, Kind: KindState, State: &s})
				w.flush()
				if w.f != nil {
					_ = w.f.Close()
				}
				return
			}
			w.write(p)
		case now := <-tick.C:
			// The counters every second while they change, every minute
			// otherwise (a follower's file stays small).
			if s := state(); now.Sub(lastAt) >= time.Minute || (s != last && now.Sub(lastAt) >= time.Second) {
				w.write(Pair{At: now, Master: master, Term: term, Kind: KindState, State: &s})
				last, lastAt = s, now
			}
			w.flush()
		}
	}
}

func (w *pairWriter) write(p Pair) {
	b, err := json.Marshal(p)
	if err != nil {
		w.logf("encoding a pair: %v", err)
		return
	}
	b = append(b, '\n')
	if w.written+int64(len(b)) > w.maxBytes {
		w.rotate()
	}
	n, err := w.w.Write(b)
	w.written += int64(n)
	if err != nil {
		w.logf("writing %s: %v", w.path(), err)
	}
}

func (w *pairWriter) flush() {
	if err := w.w.Flush(); err != nil {
		w.logf("flushing %s: %v", w.path(), err)
	}
}

// rotate keeps one previous file.
func (w *pairWriter) rotate() {
	w.flush()
	if w.f != nil {
		_ = w.f.Close()
	}
	if err := os.Rename(w.path(), w.path()+".1"); err != nil {
		w.logf("rotating %s: %v", w.path(), err)
	}
	if err := w.open(); err != nil {
		w.logf("%v: pairs are discarded from now on", err)
		w.f, w.w = nil, bufio.NewWriter(io.Discard)
	}
}

// PairFiles lists a pairs directory's files, oldest first.
func PairFiles(dir string) ([]string, error) {
	var out []string
	for _, name := range []string{PairsFile + ".1", PairsFile} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s in %s: is the master running with [master.sequencer] type = %q?", PairsFile, dir, TypeShadow)
	}
	return out, nil
}

// ReadPairs calls fn for each pair of r, in file order. A truncated last
// line (a master killed mid-write) is ignored; any other malformed line is
// an error naming its line number.
func ReadPairs(r io.Reader, fn func(Pair) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var pending error
	for line := 1; sc.Scan(); line++ {
		if pending != nil {
			return pending // a malformed line that was not the last
		}
		var p Pair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			pending = fmt.Errorf("pairs line %d: %w", line, err)
			continue
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return sc.Err()
}
