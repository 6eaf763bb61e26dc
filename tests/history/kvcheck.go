package history

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// VisualizationFile is the name of the HTML file Check writes into
// Options.VisualizationDir for a non-linearizable key-value history.
const VisualizationFile = "kv-linearizability.html"

type kvFindings struct {
	anomalies     []Anomaly
	undecided     []string
	visualization string
}

// checkKV checks every key's history with porcupine, names the failures and
// writes the failing keys out.
func checkKV(h History, opts Options) (kvFindings, error) {
	var f kvFindings
	ops := kvOperations(h)
	if len(ops) == 0 {
		return f, nil
	}
	model := kvModel()
	if porcupine.CheckOperationsTimeout(model, ops, opts.Timeout) == porcupine.Ok {
		return f, nil
	}
	illegal, undecided := decideKeys(model, ops, opts.Timeout)
	f.undecided = undecided
	idx := indexKeys(h)
	for _, k := range illegal {
		f.anomalies = append(f.anomalies, explainKey(k, idx)...)
	}
	if opts.VisualizationDir == "" || len(illegal) == 0 {
		return f, nil
	}
	path, err := visualize(model, ops, illegal, opts)
	f.visualization = path
	return f, err
}

// kvOperations converts what porcupine checks: the single-key operations
// that answered, or may have taken effect. Reads that did not answer,
// operations that certainly failed and unobservable uncertain puts
// constrain nothing.
func kvOperations(h History) []porcupine.Operation {
	clients := clientIndex(h)
	open := openReturn(h)
	skip := unobservable(h)
	var out []porcupine.Operation
	for _, op := range h {
		if !isKVKeyed(op.Input) || skip[op.ID] {
			continue
		}
		p, ok := toPorcupine(op, clients[op.Client], open)
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// isKVKeyed reports whether in is a single-key operation (its key may be
// empty).
func isKVKeyed(in Input) bool {
	_, get := in.(Get)
	return get || isKVWrite(in)
}

func toPorcupine(op Operation, client int, open int64) (porcupine.Operation, bool) {
	p := porcupine.Operation{ClientId: client, Input: op.Input, Call: op.Call, Return: op.Return, Metadata: op.ID}
	switch {
	case op.Status == Failed:
		return p, false
	case op.open() && !isKVWrite(op.Input):
		return p, false
	case op.open():
		p.Return, p.Output = open, kvOutput{}
	case isKVWrite(op.Input):
		p.Output = kvOutput{Known: true, Write: op.Result.(WriteResult)}
	default:
		p.Output = kvOutput{Known: true, Get: op.Result.(GetResult)}
	}
	return p, true
}

// clientIndex numbers the clients from 0 in their order, as porcupine's
// visualisation wants.
func clientIndex(h History) map[int]int {
	seen := make(map[int]bool)
	var ids []int
	for _, op := range h {
		if !seen[op.Client] {
			seen[op.Client] = true
			ids = append(ids, op.Client)
		}
	}
	sort.Ints(ids)
	out := make(map[int]int, len(ids))
	for i, id := range ids {
		out[id] = i
	}
	return out
}

// openReturn is a return time after every recorded time: an uncertain
// operation may take effect until the end of the history.
func openReturn(h History) int64 {
	var last int64
	for _, op := range h {
		last = max(last, op.Call)
		if !op.open() {
			last = max(last, op.Return)
		}
	}
	return last + 1
}

// decideKeys checks each key on its own (porcupine stops at the first
// failure) and sorts those it did not linearize into illegal and undecided
// (timed out), each in key order.
func decideKeys(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (illegal, undecided []string) {
	for _, part := range partitionByKey(ops) {
		k := kvKey(part[0].Input.(Input))
		switch porcupine.CheckOperationsTimeout(model, part, timeout) {
		case porcupine.Illegal:
			illegal = append(illegal, k)
		case porcupine.Unknown:
			undecided = append(undecided, k)
		}
	}
	return illegal, undecided
}

// visualize writes porcupine's HTML for the illegal keys' operations only.
func visualize(model porcupine.Model, ops []porcupine.Operation, keys []string, opts Options) (string, error) {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	var sub []porcupine.Operation
	for _, op := range ops {
		if want[kvKey(op.Input.(Input))] {
			sub = append(sub, op)
		}
	}
	_, info := porcupine.CheckOperationsVerbose(model, sub, opts.Timeout)
	if err := os.MkdirAll(opts.VisualizationDir, 0o755); err != nil {
		return "", fmt.Errorf("history: visualisation: %w", err)
	}
	path := filepath.Join(opts.VisualizationDir, VisualizationFile)
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return "", fmt.Errorf("history: visualisation: %w", err)
	}
	return path, nil
}
