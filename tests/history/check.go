package history

import (
	"fmt"
	"time"
)

// Options tune Check.
type Options struct {
	// VisualizationDir, if set, receives porcupine's HTML visualisation of
	// the non-linearizable keys (the fault tests pass build/history/<test>).
	VisualizationDir string
	// Timeout bounds each of porcupine's searches (0: none): one over the
	// whole history, then, only if that one does not pass, one per key.
	// Keys left undecided are listed in the report, not counted as
	// anomalies.
	Timeout time.Duration
	// CounterStart is each counter's first id (default 0).
	CounterStart map[string]uint64
}

// Check runs every checker over h. It fails only on a malformed history
// (an ID that is not the operation's index, a result of the wrong kind, a
// return before the call) or when the visualisation cannot be written.
func Check(h History, opts Options) (Report, error) {
	if err := validate(h); err != nil {
		return Report{}, err
	}
	kv, err := checkKV(h, opts)
	if err != nil {
		return Report{}, err
	}
	r := Report{Operations: len(h), Undecided: kv.undecided, Visualization: kv.visualization}
	r.Anomalies = append(r.Anomalies, kv.anomalies...)
	r.Anomalies = append(r.Anomalies, checkLists(h)...)
	r.Anomalies = append(r.Anomalies, checkCounters(h, opts.CounterStart)...)
	r.Anomalies = append(r.Anomalies, checkLeases(h)...)
	sortAnomalies(r.Anomalies)
	return r, nil
}

func validate(h History) error {
	for i, op := range h {
		switch {
		case op.ID != i:
			return fmt.Errorf("history: operation %d has ID %d", i, op.ID)
		case op.Input == nil:
			return fmt.Errorf("history: operation %d has no input", i)
		case op.Status == Ok && (op.Result == nil || !op.Input.fits(op.Result)):
			return fmt.Errorf("history: %v cannot answer %v (operation %d)", op.Result, op.Input, i)
		case !op.open() && op.Return < op.Call:
			return fmt.Errorf("history: operation %d returns at %d before its call at %d", i, op.Return, op.Call)
		}
	}
	return nil
}
