package pinning

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the current implementation")

// nodeID derives a stable NodeID from a label, so vectors stay readable.
func nodeID(label string) ids.NodeID {
	sum := sha256.Sum256([]byte(label))
	var id ids.NodeID
	copy(id[:], sum[:])
	return id
}

func members(weights ...uint64) []Member {
	ms := make([]Member, len(weights))
	for i, w := range weights {
		ms[i] = Member{NodeID: nodeID(fmt.Sprintf("node-%d", i)), Weight: w}
	}
	return ms
}

func rangeKey(i int) string { return "bucket-" + strconv.Itoa(i) }

func TestLog2FixedMatchesMath(t *testing.T) {
	require := require.New(t)
	const ulp = 1.0 / (1 << fracBits)
	for _, x := range []uint64{1, 2, 3, 5, 7, 1000, 1 << 20, 123456789, 1<<63 - 1, 1 << 63, math.MaxUint64 - 1} {
		got := float64(log2Fixed(x)) / (1 << fracBits)
		want := math.Log2(float64(x))
		require.InDelta(want, got, 64*ulp, "log2(%d)", x)
	}
	for i := 0; i < 10000; i++ {
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		x := binary.BigEndian.Uint64(sum[:8])>>uint(i%64) | 1
		got := float64(log2Fixed(x)) / (1 << fracBits)
		require.InDelta(math.Log2(float64(x)), got, 64*ulp, "log2(%d)", x)
	}
	require.Zero(distance(math.MaxUint64))
	require.Equal(uint64(64)<<fracBits, distance(0))
}

func TestEmptyAndZeroWeightSets(t *testing.T) {
	require := require.New(t)
	_, err := Owner("r", nil)
	require.ErrorIs(err, ErrEmptySet)
	_, err = Owner("r", members(0, 0, 0))
	require.ErrorIs(err, ErrEmptySet)
	_, err = NewSet(1, nil)
	require.ErrorIs(err, ErrEmptySet)
	_, err = IsOwner("r", nodeID("x"), nil)
	require.ErrorIs(err, ErrEmptySet)
}

func TestDuplicateMembersRejected(t *testing.T) {
	require := require.New(t)
	ms := members(1, 2, 3)
	ms = append(ms, Member{NodeID: ms[1].NodeID, Weight: 5})
	_, err := Owner("r", ms)
	require.ErrorIs(err, ErrDuplicateMember)
	_, err = SetFingerprint(1, ms)
	require.ErrorIs(err, ErrDuplicateMember)
	_, err = NewSet(1, ms)
	require.ErrorIs(err, ErrDuplicateMember)
}

func TestWeightOverflowRejected(t *testing.T) {
	_, err := Owner("r", members(math.MaxUint64, 1))
	require.ErrorIs(t, err, ErrWeightOverflow)
}

func TestDeterministicAndOrderIndependent(t *testing.T) {
	require := require.New(t)
	ms := members(3, 1, 4, 1, 5, 9, 2)
	reversed := make([]Member, len(ms))
	for i, m := range ms {
		reversed[len(ms)-1-i] = m
	}
	e, err := NewSet(7, ms)
	require.NoError(err)
	for i := 0; i < 2000; i++ {
		k := rangeKey(i)
		a, err := Owner(k, ms)
		require.NoError(err)
		b, err := Owner(k, reversed)
		require.NoError(err)
		require.Equal(a, b, "range %s", k)
		require.Equal(a, e.Owner(k), "range %s", k)
	}
	fa, err := SetFingerprint(7, ms)
	require.NoError(err)
	fb, err := SetFingerprint(7, reversed)
	require.NoError(err)
	require.Equal(fa, fb)
	require.Equal(fa, e.Fingerprint())
}

func TestExactlyOneOwner(t *testing.T) {
	require := require.New(t)
	ms := members(1, 2, 3, 4, 1, 2, 3)
	for i := 0; i < 5000; i++ {
		k := rangeKey(i)
		owners := 0
		for _, m := range ms {
			ok, err := IsOwner(k, m.NodeID, ms)
			require.NoError(err)
			if ok {
				owners++
			}
		}
		require.Equal(1, owners, "range %s", k)
	}
}

func TestFingerprintSeparatesInputs(t *testing.T) {
	require := require.New(t)
	base, err := SetFingerprint(10, members(1, 2, 3))
	require.NoError(err)
	for name, fp := range map[string]func() (ids.ID, error){
		"height":  func() (ids.ID, error) { return SetFingerprint(11, members(1, 2, 3)) },
		"weight":  func() (ids.ID, error) { return SetFingerprint(10, members(1, 2, 4)) },
		"member":  func() (ids.ID, error) { return SetFingerprint(10, members(1, 2)) },
		"nonzero": func() (ids.ID, error) { return SetFingerprint(10, members(1, 2, 3, 0)) },
	} {
		got, err := fp()
		require.NoError(err, name)
		require.NotEqual(base, got, name)
	}
}

func TestWeightedShares(t *testing.T) {
	require := require.New(t)
	ms := members(1, 2, 3, 4, 1, 2, 3, 4)
	e, err := NewSet(1, ms)
	require.NoError(err)
	const keys = 200_000
	counts := make(map[ids.NodeID]int)
	for i := 0; i < keys; i++ {
		counts[e.Owner(rangeKey(i))]++
	}
	for _, m := range ms {
		want := float64(m.Weight) / float64(e.TotalWeight())
		got := float64(counts[m.NodeID]) / keys
		require.InDelta(want, got, 0.01, "member with weight %d", m.Weight)
	}
}

func TestZeroWeightNeverOwns(t *testing.T) {
	require := require.New(t)
	ms := members(0, 1, 0, 2, 0)
	e, err := NewSet(1, ms)
	require.NoError(err)
	for i := 0; i < 20000; i++ {
		w, ok := e.Weight(e.Owner(rangeKey(i)))
		require.True(ok)
		require.NotZero(w)
	}
}

func TestMinimalDisruption(t *testing.T) {
	require := require.New(t)
	const keys = 20000
	before := members(1, 2, 3, 4, 2)
	extra := Member{NodeID: nodeID("newcomer"), Weight: 3}
	after := append(append([]Member(nil), before...), extra)
	eBefore, err := NewSet(1, before)
	require.NoError(err)
	eAfter, err := NewSet(2, after)
	require.NoError(err)

	// Add: a range either keeps its owner or moves to the newcomer.
	gained := 0
	for i := 0; i < keys; i++ {
		k := rangeKey(i)
		a, b := eBefore.Owner(k), eAfter.Owner(k)
		if a != b {
			require.Equal(extra.NodeID, b, "spurious move of %s on add", k)
			gained++
		}
	}
	require.Positive(gained)

	// Remove: only the removed member's ranges move.
	removed := before[2]
	var rest []Member
	for _, m := range before {
		if m.NodeID != removed.NodeID {
			rest = append(rest, m)
		}
	}
	eRest, err := NewSet(3, rest)
	require.NoError(err)
	moved := 0
	for i := 0; i < keys; i++ {
		k := rangeKey(i)
		a, b := eBefore.Owner(k), eRest.Owner(k)
		if a != b {
			require.Equal(removed.NodeID, a, "spurious move of %s on remove", k)
			moved++
		}
	}
	require.Positive(moved)
}

// TestAgreesWithRealValuedRule checks the integer rule against the textbook
// formula w / -ln(u) evaluated in float64 (the reference lives only in this
// test). They may differ only on near-ties that float64 cannot resolve.
func TestAgreesWithRealValuedRule(t *testing.T) {
	ms := members(1, 2, 3, 4, 5)
	disagree := 0
	const keys = 20000
	for i := 0; i < keys; i++ {
		k := rangeKey(i)
		got, err := Owner(k, ms)
		require.NoError(t, err)
		var best ids.NodeID
		bestScore := math.Inf(-1)
		prefix := scorePrefix(k)
		for _, m := range ms {
			h := scoreHash(prefix, m.NodeID)
			u := (float64(h) + 1) / math.Exp2(64)
			score := float64(m.Weight) / -math.Log(u)
			if score > bestScore {
				best, bestScore = m.NodeID, score
			}
		}
		if best != got {
			disagree++
		}
	}
	require.LessOrEqual(t, disagree, 2, "integer and real-valued rules disagree on %d of %d ranges", disagree, keys)
}

type vectorFile struct {
	Comment string      `json:"comment"`
	Sets    []vectorSet `json:"sets"`
}

type vectorSet struct {
	Height      uint64            `json:"height"`
	Members     []Member          `json:"members"`
	Fingerprint ids.ID            `json:"fingerprint"`
	Owners      map[string]string `json:"owners"`
}

func knownAnswerSets() []vectorSet {
	sets := []vectorSet{
		{Height: 0, Members: members(1)},
		{Height: 1, Members: members(1, 1, 1)},
		{Height: 42, Members: members(1, 2, 3, 4)},
		{Height: 1 << 40, Members: members(100, 0, 2000, 30000, 1, 5)},
		{Height: math.MaxUint64, Members: members(math.MaxUint64/4, math.MaxUint64/4, math.MaxUint64/4)},
	}
	for i := range sets {
		sets[i].Owners = map[string]string{}
	}
	return sets
}

func knownAnswerKeys() []string {
	keys := []string{"", "a", "bucket", "bucket/0001", "photos/band-7", strings.Repeat("x", 300), "\x00ключ/日本"}
	for i := 0; i < 25; i++ {
		keys = append(keys, rangeKey(i))
	}
	return keys
}

// TestKnownAnswers pins owners and fingerprints to checked-in vectors. It
// also runs under GOARCH=386 (make test), which is how "bit-identical on every
// CPU" is shown rather than claimed.
func TestKnownAnswers(t *testing.T) {
	require := require.New(t)
	path := filepath.Join("testdata", "vectors.json")
	if *update {
		vf := vectorFile{Comment: "HRW owners and epoch fingerprints; regenerate only on a deliberate, versioned rule change (go test ./pinning -run KnownAnswers -update)"}
		for _, set := range knownAnswerSets() {
			fp, err := SetFingerprint(set.Height, set.Members)
			require.NoError(err)
			set.Fingerprint = fp
			for _, k := range knownAnswerKeys() {
				o, err := Owner(k, set.Members)
				require.NoError(err)
				set.Owners[k] = o.String()
			}
			vf.Sets = append(vf.Sets, set)
		}
		b, err := json.MarshalIndent(vf, "", "  ")
		require.NoError(err)
		require.NoError(os.WriteFile(path, append(b, '\n'), 0o644))
	}
	b, err := os.ReadFile(path)
	require.NoError(err)
	var vf vectorFile
	require.NoError(json.Unmarshal(b, &vf))
	require.Len(vf.Sets, len(knownAnswerSets()))
	checked := 0
	for _, set := range vf.Sets {
		fp, err := SetFingerprint(set.Height, set.Members)
		require.NoError(err)
		require.Equal(set.Fingerprint, fp, "fingerprint at height %d", set.Height)
		e, err := NewSet(set.Height, set.Members)
		require.NoError(err)
		require.Len(set.Owners, len(knownAnswerKeys()))
		for k, want := range set.Owners {
			require.Equal(want, e.Owner(k).String(), "owner of %q at height %d", k, set.Height)
			checked++
		}
	}
	require.Positive(checked)
}

// TestNoFloatingPoint keeps floats out of the package's non-test code: the
// owner must not depend on how a CPU rounds.
func TestNoFloatingPoint(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, imp := range file.Imports {
			require.NotEqual(t, `"math"`, imp.Path.Value, "%s imports math", f)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				require.NotContains(t, []string{"float32", "float64", "complex64", "complex128"}, x.Name, "%s uses %s", fset.Position(x.Pos()), x.Name)
			case *ast.BasicLit:
				require.NotEqual(t, token.FLOAT, x.Kind, "%s has a float literal", fset.Position(x.Pos()))
			}
			return true
		})
	}
}

func BenchmarkOwner(b *testing.B) {
	for _, n := range []int{5, 21, 100} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			ws := make([]uint64, n)
			for i := range ws {
				ws[i] = uint64(i%4 + 1)
			}
			e, err := NewSet(1, members(ws...))
			require.NoError(b, err)
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = rangeKey(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = e.Owner(keys[i%len(keys)])
			}
		})
	}
}
