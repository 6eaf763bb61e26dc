package benchmark

import (
	"fmt"
	"io"
	"strings"
)

// Markdown is a report being written as Markdown (so that a run's output
// pastes into the docs as is): paragraphs and tables. Every report of the
// benchmarks (WriteTables, weedbench and storebench) writes through it.
type Markdown struct{ b strings.Builder }

// Col is one column of a table: Num right-aligns it (numbers).
type Col struct {
	Name string
	Num  bool
}

// Text is a left-aligned column, Num a right-aligned one.
func Text(name string) Col { return Col{Name: name} }

// Num is a right-aligned column (numbers).
func Num(name string) Col { return Col{Name: name, Num: true} }

// Para writes a paragraph: format's text, a blank line before it.
func (m *Markdown) Para(format string, args ...any) {
	m.b.WriteString("\n")
	fmt.Fprintf(&m.b, format, args...)
	m.b.WriteString("\n")
}

// Line writes format's text as is (the rest of a paragraph, say).
func (m *Markdown) Line(format string, args ...any) { fmt.Fprintf(&m.b, format, args...) }

// Table starts a table: a blank line, the header and the alignment row.
func (m *Markdown) Table(cols ...Col) {
	m.b.WriteString("\n|")
	for _, c := range cols {
		m.b.WriteString(" " + c.Name + " |")
	}
	m.b.WriteString("\n|")
	for _, c := range cols {
		if c.Num {
			m.b.WriteString(" ---: |")
		} else {
			m.b.WriteString(" --- |")
		}
	}
	m.b.WriteString("\n")
}

// Row writes one row of the table, each cell as fmt's %v prints it.
func (m *Markdown) Row(cells ...any) {
	m.b.WriteString("|")
	for _, c := range cells {
		fmt.Fprintf(&m.b, " %v |", c)
	}
	m.b.WriteString("\n")
}

// WriteTo writes the report to w.
func (m *Markdown) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, strings.TrimPrefix(m.b.String(), "\n"))
	return int64(n), err
}
