package storebench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/s-chain/schain/tools/benchmark"
)

// WriteTables writes the report as Markdown: every store's PUTs and GETs,
// the S-Chain store's ratios against the others, and the races.
func WriteTables(w io.Writer, r *Report) error {
	var m benchmark.Markdown
	s := r.Settings
	m.Para("S3 through SeaweedFS filer stores on one cluster: %d closed-loop clients on one gateway per store, objects of %d bytes, %d rounds of %v per store and operation, interleaved; req/s is the median over rounds, latencies pooled.",
		s.Clients, s.ObjectSize, s.Rounds, s.RoundDuration)
	m.Table(benchmark.Text("store"), benchmark.Num("PUT/s"), benchmark.Num("PUT p50"), benchmark.Num("PUT p99"), benchmark.Num("PUT failed"),
		benchmark.Num("GET/s"), benchmark.Num("GET p50"), benchmark.Num("GET p99"), benchmark.Num("GET failed"))
	for _, st := range r.Stores {
		m.Row(st.Name, benchmark.Thousands(st.PutPerSec), benchmark.Duration(st.Put.P50), benchmark.Duration(st.Put.P99), st.Put.Failures,
			benchmark.Thousands(st.GetPerSec), benchmark.Duration(st.Get.P50), benchmark.Duration(st.Get.P99), st.Get.Failures)
	}
	if sc := r.find("schain"); sc != nil {
		first := true
		for _, other := range []struct {
			name   string
			target float64
		}{{"etcd", 1.0}, {"leveldb2", 0.5}} {
			o := r.find(other.name)
			if o == nil || o.PutPerSec == 0 {
				continue
			}
			ratio := sc.PutPerSec / o.PutPerSec
			line := fmt.Sprintf("S-Chain store / %s: PUT throughput %.2fx (target >= %.1fx: %s), PUT p99 %.2fx, GET throughput %.2fx.", other.name,
				ratio, other.target, benchmark.Met(ratio >= other.target), durationRatio(sc.Put.P99, o.Put.P99), floatRatio(sc.GetPerSec, o.GetPerSec))
			if first {
				m.Para("%s", line)
			} else {
				m.Line("%s\n", line)
			}
			first = false
		}
	}
	writeCPU(&m, r)
	m.Para("Conditional PUTs: in each trial four exclusive creates (If-None-Match: *) of one new key race, two through each of two gateways on two filers sharing the store. A double commit is a trial in which more than one succeeded.")
	m.Table(benchmark.Text("store"), benchmark.Num("trials"), benchmark.Num("double commits"), benchmark.Num("no commit"), benchmark.Text("errors"))
	for _, st := range r.Stores {
		if c := st.Conditional; c != nil {
			m.Row(st.Name, c.Trials, c.DoubleCommits, c.NoCommit, strings.Join(c.Errors, "; "))
		}
	}
	for _, st := range r.Stores {
		if len(st.PutFailures)+len(st.GetFailures) > 0 {
			m.Para("%s, first failures: %s", st.Name, strings.Join(append(st.PutFailures, st.GetFailures...), "; "))
		}
	}
	_, err := m.WriteTo(w)
	return err
}

// writeCPU reports what each group of processes used during each store's
// PUT rounds and, for the S-Chain store, the cores its measured CPU per
// PUT would take at each target's rate.
func writeCPU(m *benchmark.Markdown, r *Report) {
	first := true
	for _, st := range r.Stores {
		for _, g := range st.PutCPU {
			if first {
				m.Para("CPU during the PUT rounds, by group of processes (own processes: the store's filers, gateways and servers; machine: every core's busy time, whoever used it): cores kept busy on average, CPU time per PUT answered, and for the validators the blocks they accepted.")
				m.Table(benchmark.Text("store"), benchmark.Text("group"), benchmark.Num("cores"), benchmark.Num("CPU per PUT"),
					benchmark.Num("blocks/s"), benchmark.Num("PUTs per block"), benchmark.Num("CPU per block"))
				first = false
			}
			u := g.Use
			blocks, perBlock, putsPerBlock := "—", "—", "—"
			if u.Blocks > 0 {
				blocks = fmt.Sprintf("%.1f", float64(u.Blocks)/u.Wall.Seconds())
				perBlock, putsPerBlock = benchmark.CPUText(u.PerBlock()), fmt.Sprintf("%.1f", float64(u.Requests)/float64(u.Blocks))
			}
			name := g.Group
			if g.PartOf != "" {
				name = fmt.Sprintf("%s (of the %s)", g.Group, g.PartOf)
			}
			m.Row(st.Name, name, fmt.Sprintf("%.2f", u.Cores()), benchmark.CPUText(u.PerRequest()), blocks, putsPerBlock, perBlock)
		}
	}
	sc := r.find("schain")
	if sc == nil {
		return
	}
	var perPut time.Duration
	for _, g := range sc.PutCPU {
		if g.Group != machineGroup && g.PartOf == "" {
			perPut += g.Use.PerRequest()
		}
	}
	if perPut == 0 {
		return
	}
	targets := []struct {
		name   string
		target float64
	}{{"etcd", 1.0}, {"leveldb2", 0.5}}
	for _, other := range targets {
		if o := r.find(other.name); o != nil && o.PutPerSec > 0 {
			rate := other.target * o.PutPerSec
			m.Line("At %.1fx %s's PUT rate (%s/s), the S-Chain store's processes would keep %.2f cores busy at the CPU per PUT measured here (%s, every group but the machine; it falls as blocks carry more PUTs); the machine has %d.\n",
				other.target, other.name, benchmark.Thousands(rate), rate*perPut.Seconds(), benchmark.CPUText(perPut), r.Machine.CPUs)
		}
	}
	// A part kept and the rest of its group left out: what the store would
	// cost if the rest (the validators' plugins) cost nothing, a bound no
	// change to them can beat.
	for _, part := range sc.PutCPU {
		whole := sc.group(part.PartOf)
		if part.PartOf == "" || whole == nil {
			continue
		}
		without := perPut - whole.Use.PerRequest() + part.Use.PerRequest()
		for _, other := range targets {
			if o := r.find(other.name); o != nil && o.PutPerSec > 0 {
				rate := other.target * o.PutPerSec
				m.Line("Of the %s, the %s alone counted (the rest free): at %.1fx %s's PUT rate (%s/s), %.2f cores (%s per PUT); the machine has %d.\n",
					part.PartOf, part.Group, other.target, other.name, benchmark.Thousands(rate), rate*without.Seconds(), benchmark.CPUText(without), r.Machine.CPUs)
			}
		}
	}
}

// group is the result's use by the named group (nil if none).
func (res *Result) group(name string) *GroupCPU {
	for i := range res.PutCPU {
		if res.PutCPU[i].Group == name {
			return &res.PutCPU[i]
		}
	}
	return nil
}

func (r *Report) find(name string) *Result {
	for i := range r.Stores {
		if r.Stores[i].Name == name {
			return &r.Stores[i]
		}
	}
	return nil
}

func floatRatio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func durationRatio[T ~int64](a, b T) float64 { return floatRatio(float64(a), float64(b)) }
