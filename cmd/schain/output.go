package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/api"
)

// field is one "key: value" line of the readable output; keys may repeat
// (one line per list item).
type field struct {
	key   string
	value any
}

// emit prints v as indented JSON with --json, else fields aligned on their
// values, so that both humans and scripts get a stable shape.
func (g *globals) emit(v any, fields []field) error {
	if g.json {
		enc := json.NewEncoder(g.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return writeFields(g.out, fields)
}

func writeFields(w io.Writer, fields []field) error {
	width := 0
	for _, f := range fields {
		width = max(width, len(f.key)+1)
	}
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%-*s %v\n", width, f.key+":", f.value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func receiptFields(rc *api.ReceiptReply) []field {
	fs := []field{{"txID", rc.TxID}, {"status", rc.Status}}
	if rc.Height != 0 {
		fs = append(fs, field{"height", rc.Height})
	}
	if rc.Error != "" {
		fs = append(fs, field{"error", rc.Error})
	}
	if rc.ReplacedBy != nil {
		fs = append(fs, field{"replacedBy", *rc.ReplacedBy})
	}
	if rc.Final {
		fs = append(fs, field{"final", fmt.Sprintf("certified at height %d (schain verify %s checks it)", rc.CertifiedBy, rc.TxID)})
	}
	for _, e := range rc.Entries {
		fs = append(fs, field{"entry", entryString(e)})
	}
	return fs
}

// waitedFields shows the receipt a write waited for; its txID is shown only
// when a re-pin replaced the transaction the node first answered with.
func waitedFields(txID ids.ID, rc *api.ReceiptReply) []field {
	fs := receiptFields(rc)
	if rc.TxID == txID {
		return fs[1:]
	}
	fs[0].key = "finalTxID"
	return fs
}

func entryString(e state.ReceiptEntry) string {
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
func chunkString(c txs.Chunk) string {
	return fmt.Sprintf("%s:%d:%d:%s", c.Range, c.ID, c.Size, c.Hash)
}

// parseID accepts an ID in CB58 (the API's form) or as 64 hex digits (what
// sha256sum prints).
func parseID(s string) (ids.ID, error) {
	if len(s) == 2*ids.IDLen {
		if b, err := hex.DecodeString(s); err == nil {
			return ids.ID(b), nil
		}
	}
	id, err := ids.FromString(s)
	if err != nil {
		return ids.Empty, fmt.Errorf("%q is neither CB58 nor 64 hex digits: %w", s, err)
	}
	return id, nil
}
