package cli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/s-chain/schain/api"
)

// Field is one "key: value" line of the readable output; keys may repeat
// (one line per list item).
type Field struct {
	Key   string
	Value any
}

// errTwoResults is a command's bug: with --json, stdout holds one document.
var errTwoResults = errors.New("schain: a command produced two results")

// Emit is the command's result: fields aligned on their values, or with
// --json the one JSON document stdout holds, so that humans and scripts
// both get a stable shape.
func (g *Globals) Emit(v any, fields []Field) error {
	return g.EmitText(v, func(w io.Writer) error { return WriteFields(w, fields) })
}

// EmitText is emit for a result whose readable form is not fields: text
// writes it.
//
// With --json nothing is written yet: execute writes the document when the
// command returns, with the failure as its "error" member if the command
// then fails (a wait that ran out after the transaction was submitted, a
// rejected receipt), so that stdout always holds exactly one JSON document.
func (g *Globals) EmitText(v any, text func(io.Writer) error) error {
	if !g.JSON {
		return text(g.Out)
	}
	if g.result != nil {
		return errTwoResults
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	g.result = b
	return nil
}

// EmitLine is emit for a result whose readable form is one line.
func (g *Globals) EmitLine(v any, line string) error {
	return g.EmitText(v, func(w io.Writer) error {
		_, err := fmt.Fprintln(w, line)
		return err
	})
}

// Note writes a line for the reader (progress, what happens next): to
// stdout with the results, or to stderr with --json, where stdout holds
// only the JSON document.
func (g *Globals) Note(format string, args ...any) {
	fmt.Fprintf(g.Notes(), format, args...)
}

// Notes is where note writes.
func (g *Globals) Notes() io.Writer {
	if g.JSON {
		return g.ErrOut
	}
	return g.Out
}

// stream writes one JSON line of a command whose result is a stream (one
// object per pass, say), for --json. Nothing else is written to stdout
// after the first line, not even a failure.
func (g *Globals) stream(v any) error {
	g.streamed = true
	return json.NewEncoder(g.Out).Encode(v)
}

// WriteJSON writes, with --json, what stdout holds when the command
// returns: its result, with the failure f as an "error" member when the
// result is an object; {"error": f} without a result; nothing after a
// stream (its lines carry their errors) or when there was neither.
func (g *Globals) WriteJSON(f *failure) error {
	if g.streamed {
		return nil
	}
	doc := g.result
	switch {
	case doc == nil && f == nil:
		return nil
	case doc == nil:
		b, err := json.Marshal(map[string]*failure{"error": f})
		if err != nil {
			return err
		}
		doc = b
	case f != nil:
		var err error
		if doc, err = withError(doc, f); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := g.Out.Write(out.Bytes())
	return err
}

// withError adds f to the JSON object doc as its "error" member. A list
// (schain node) or an object that has an "error" member already is left
// as it is: its entries carry their own errors.
func withError(doc []byte, f *failure) ([]byte, error) {
	var members map[string]json.RawMessage
	if json.Unmarshal(doc, &members) != nil || members["error"] != nil {
		return doc, nil
	}
	e, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	doc = bytes.TrimRight(doc, " \n")
	if len(members) == 0 {
		return append([]byte(`{"error":`), append(e, '}')...), nil
	}
	out := append(doc[:len(doc)-1:len(doc)-1], `,"error":`...)
	return append(append(out, e...), '}'), nil
}

func WriteFields(w io.Writer, fields []Field) error {
	width := 0
	for _, f := range fields {
		width = max(width, len(f.Key)+1)
	}
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%-*s %v\n", width, f.Key+":", f.Value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func receiptFields(rc *api.ReceiptReply) []Field {
	fs := []Field{{"txID", rc.TxID}, {"status", rc.Status}}
	if rc.Height != 0 {
		fs = append(fs, Field{"height", rc.Height})
	}
	if rc.Error != "" {
		fs = append(fs, Field{"error", rc.Error})
	}
	if rc.ReplacedBy != nil {
		fs = append(fs, Field{"replacedBy", *rc.ReplacedBy})
	}
	if rc.Final {
		fs = append(fs, Field{"final", fmt.Sprintf("certified at height %d (schain verify %s checks it)", rc.CertifiedBy, rc.TxID)})
	}
	for _, e := range rc.Entries {
		fs = append(fs, Field{"entry", entryString(e)})
	}
	return fs
}

// waitedFields shows the receipt a write waited for; its txID is shown only
// when a re-pin replaced the transaction the node first answered with.
func waitedFields(txID api.ID, rc *api.ReceiptReply) []Field {
	fs := receiptFields(rc)
	if rc.TxID == txID {
		return fs[1:]
	}
	fs[0].Key = "finalTxID"
	return fs
}

func entryString(e api.ReceiptEntry) string {
	if e.Bucket != "" {
		s := fmt.Sprintf("manifest %q/%q", e.Bucket, e.Key)
		if e.Deleted {
			s += " (deleted)"
		}
		return s
	}
	return fmt.Sprintf("range %q ids [%d, %d) base %d count %d", e.Range, e.Base, e.Base+e.Count, e.Base, e.Count)
}

// chunkString is the --chunk syntax, so a manifest's chunks can be pasted
// back into put-manifest.
func chunkString(c api.Chunk) string {
	return fmt.Sprintf("%s:%d:%d:%s", c.Range, c.ID, c.Size, c.Hash)
}

// parseID accepts an ID in CB58 (the API's form) or as 64 hex digits (what
// sha256sum prints).
func parseID(s string) (api.ID, error) {
	var id api.ID
	if len(s) == 2*len(id) {
		if b, err := hex.DecodeString(s); err == nil {
			return api.ID(b), nil
		}
	}
	id, err := api.ParseID(s)
	if err != nil {
		return api.ID{}, fmt.Errorf("%q is neither CB58 nor 64 hex digits: %w", s, err)
	}
	return id, nil
}
