package storebench

import (
	"fmt"
	"io"
	"strings"

	"github.com/s-chain/schain/benchmark"
)

// WriteTables writes the report as Markdown: every store's PUTs and GETs,
// the S-Chain store's ratios against the others, and the races.
func WriteTables(w io.Writer, r *Report) error {
	var b strings.Builder
	s := r.Settings
	fmt.Fprintf(&b, "S3 through SeaweedFS filer stores on one cluster: %d closed-loop clients on one gateway per store, objects of %d bytes, %d rounds of %v per store and operation, interleaved; req/s is the median over rounds, latencies pooled.\n\n",
		s.Clients, s.ObjectSize, s.Rounds, s.RoundDuration)
	b.WriteString("| store | PUT/s | PUT p50 | PUT p99 | PUT failed | GET/s | GET p50 | GET p99 | GET failed |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, st := range r.Stores {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %s | %d |\n", st.Name,
			benchmark.Thousands(st.PutPerSec), benchmark.Duration(st.Put.P50), benchmark.Duration(st.Put.P99), st.Put.Failures,
			benchmark.Thousands(st.GetPerSec), benchmark.Duration(st.Get.P50), benchmark.Duration(st.Get.P99), st.Get.Failures)
	}
	if sc := r.find("schain"); sc != nil {
		for _, other := range []struct {
			name   string
			target float64
		}{{"etcd", 1.0}, {"leveldb2", 0.5}} {
			o := r.find(other.name)
			if o == nil || o.PutPerSec == 0 {
				continue
			}
			ratio := sc.PutPerSec / o.PutPerSec
			fmt.Fprintf(&b, "\nS-Chain store / %s: PUT throughput %.2fx (target >= %.1fx: %s), PUT p99 %.2fx, GET throughput %.2fx.", other.name,
				ratio, other.target, benchmark.Met(ratio >= other.target), durationRatio(sc.Put.P99, o.Put.P99), floatRatio(sc.GetPerSec, o.GetPerSec))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nConditional PUTs: in each trial four exclusive creates (If-None-Match: *) of one new key race, two through each of two gateways on two filers sharing the store. A double commit is a trial in which more than one succeeded.\n\n")
	b.WriteString("| store | trials | double commits | no commit | errors |\n| --- | ---: | ---: | ---: | --- |\n")
	for _, st := range r.Stores {
		if c := st.Conditional; c != nil {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", st.Name, c.Trials, c.DoubleCommits, c.NoCommit, strings.Join(c.Errors, "; "))
		}
	}
	for _, st := range r.Stores {
		if len(st.PutFailures)+len(st.GetFailures) > 0 {
			fmt.Fprintf(&b, "\n%s, first failures: %s\n", st.Name, strings.Join(append(st.PutFailures, st.GetFailures...), "; "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
