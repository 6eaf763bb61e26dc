package history

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHistoryRecorderRecordsEachOutcome(t *testing.T) {
	s := newScript()
	s.r.Invoke(3, Put{"k", "a"}).Ok(applied(1))
	s.r.Invoke(4, Put{"k", "b"}).Fail(errors.New("refused"))
	s.r.Invoke(5, Put{"k", "c"}).Info(errTimeout)
	s.r.Invoke(6, Get{"k"})
	h := s.r.History()
	require.Len(t, h, 4)
	want := []Operation{
		{ID: 0, Client: 3, Input: Put{"k", "a"}, Call: 1, Return: 2, Status: Ok, Result: applied(1)},
		{ID: 1, Client: 4, Input: Put{"k", "b"}, Call: 3, Return: 4, Status: Failed, Err: "refused"},
		{ID: 2, Client: 5, Input: Put{"k", "c"}, Call: 5, Return: 6, Status: Unknown, Err: "timeout"},
		{ID: 3, Client: 6, Input: Get{"k"}, Call: 7, Status: Pending},
	}
	require.Equal(t, want, []Operation(h))
	require.Contains(t, h[2].String(), "open")
}

func TestHistoryRecorderRefusesClientBugs(t *testing.T) {
	s := newScript()
	h := s.r.Invoke(0, Put{"k", "a"})
	h.Ok(applied(1))
	require.Panics(t, func() { h.Info(errTimeout) })
	require.Panics(t, func() { s.r.Invoke(0, Get{"k"}).Ok(applied(1)) })
	require.Panics(t, func() { s.r.Invoke(0, Get{"k"}).Ok(nil) })
}

func TestCheckerRefusesMalformedHistories(t *testing.T) {
	cases := map[string]History{
		"id":     {{ID: 1, Input: Get{"k"}}},
		"result": {{ID: 0, Input: Get{"k"}, Status: Ok, Result: applied(1)}},
		"time":   {{ID: 0, Input: Get{"k"}, Call: 5, Return: 4, Status: Ok, Result: GetResult{}}},
		"input":  {{ID: 0}},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Check(h, Options{})
			require.Error(t, err)
		})
	}
}

func TestCheckerWritesVisualizationOfFailingHistory(t *testing.T) {
	s := newScript()
	s.ok(0, Put{"ok", "a"}, applied(0))
	s.ok(1, Get{"ok"}, found("a", 0))
	s.ok(0, Put{"k", "a"}, applied(0))
	s.ok(0, Put{"k", "b"}, applied(0))
	s.ok(1, Get{"k"}, found("a", 0))
	dir := filepath.Join(t.TempDir(), "build", "history", t.Name())
	rep := s.check(t, Options{VisualizationDir: dir})
	require.Equal(t, filepath.Join(dir, VisualizationFile), rep.Visualization)
	html, err := os.ReadFile(rep.Visualization)
	require.NoError(t, err)
	require.Contains(t, string(html), "<html")
	require.Contains(t, string(html), `put(\"k\", \"b\")`)
	require.NotContains(t, string(html), `put(\"ok\"`, "only the failing keys are drawn")
	require.Contains(t, rep.String(), rep.Visualization)
}

func TestCheckerReportIsDeterministic(t *testing.T) {
	s := newScript()
	for _, k := range []string{"z", "a", "m"} {
		s.ok(0, Put{k, "a"}, applied(0))
		s.ok(0, Put{k, "b"}, applied(0))
		s.ok(1, Get{k}, found("a", 0))
	}
	s.ok(0, Allocate{"c", 2}, Allocation{Base: 0, Count: 2})
	s.ok(0, Allocate{"c", 2}, Allocation{Base: 1, Count: 2})
	first := s.check(t, Options{})
	for range 5 {
		again := s.check(t, Options{})
		require.Equal(t, first.String(), again.String())
		require.Equal(t, first.Anomalies, again.Anomalies)
	}
	var subjects []string
	for _, a := range first.Anomalies {
		subjects = append(subjects, a.Subject)
	}
	require.Equal(t, []string{"a", "m", "z", "c"}, subjects)
	require.Equal(t, "11 operations checked, 4 anomalies; lost write: 3; reissued id: 1", first.String())
}

// memStore is a linearizable store: one lock around every operation.
type memStore struct {
	mu      sync.Mutex
	values  map[string]string
	version map[string]uint64
	next    uint64
}

func (m *memStore) apply(in Input) Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch o := in.(type) {
	case Get:
		v, ok := m.values[o.Key]
		return GetResult{Found: ok, Value: v, Version: m.version[o.Key]}
	case Put:
		return m.write(o.Key, o.Value, true)
	case PutIfVersion:
		_, live := m.values[o.Key]
		return m.write(o.Key, o.Value, live && m.version[o.Key] == o.Version)
	case Delete:
		_, live := m.values[o.Key]
		if live {
			delete(m.values, o.Key)
			m.version[o.Key]++
		}
		return WriteResult{Applied: live, Version: m.version[o.Key]}
	case List:
		return m.list(o.Prefix)
	case Allocate:
		a := Allocation{Base: m.next, Count: o.Count}
		m.next += o.Count
		return a
	case ReadCounter:
		return CounterValue{Next: m.next}
	}
	panic(fmt.Sprintf("memStore: %v", in))
}

func (m *memStore) write(key, value string, ok bool) WriteResult {
	if !ok {
		return WriteResult{}
	}
	m.values[key] = value
	m.version[key] += 1 + uint64(len(value)%3) // versions grow, not by one
	return WriteResult{Applied: true, Version: m.version[key]}
}

func (m *memStore) list(prefix string) ListResult {
	var out ListResult
	for k, v := range m.values {
		if strings.HasPrefix(k, prefix) {
			out.Entries = append(out.Entries, Entry{k, v})
		}
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Key < out.Entries[j].Key })
	return out
}

// randomInput is one of the operations concurrent clients send.
func randomInput(rnd *rand.Rand, client, i int) Input {
	key := fmt.Sprintf("d/%d", rnd.Intn(3))
	value := fmt.Sprintf("c%d-%d", client, i)
	switch rnd.Intn(8) {
	case 0, 1:
		return Put{key, value}
	case 2:
		return PutIfVersion{key, value, uint64(rnd.Intn(6))}
	case 3:
		return Delete{key}
	case 4:
		return List{"d/"}
	case 5:
		return Allocate{"c", uint64(1 + rnd.Intn(4))}
	case 6:
		return ReadCounter{"c"}
	}
	return Get{key}
}

func TestHistoryOfConcurrentClientsOfALinearizableStorePasses(t *testing.T) {
	store := &memStore{values: map[string]string{}, version: map[string]uint64{}}
	var tick atomic.Int64
	r := NewRecorder(func() int64 { return tick.Add(1) })
	const clients, opsPerClient = 6, 120
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(c)))
			for i := range opsPerClient {
				in := randomInput(rnd, c, i)
				h := r.Invoke(c, in)
				switch roll := rnd.Intn(50); {
				case roll == 0:
					h.Fail(errors.New("refused before sending"))
				case roll == 1:
					h.Info(errTimeout) // lost before it reached the store
				case roll == 2:
					store.apply(in)
					h.Info(errTimeout) // the answer was lost
				default:
					h.Ok(store.apply(in))
				}
			}
		}()
	}
	wg.Wait()
	rep, err := Check(r.History(), Options{VisualizationDir: t.TempDir()})
	require.NoError(t, err)
	require.True(t, rep.Ok(), "%v", rep.Anomalies)
	require.Empty(t, rep.Undecided)
	require.Equal(t, clients*opsPerClient, rep.Operations)
}

// staleStore answers a get, now and then, with what the key held before
// its last write: a cache that missed an invalidation.
type staleStore struct {
	*memStore
	prev map[string]GetResult
}

func (s *staleStore) apply(in Input, rnd *rand.Rand) Result {
	if g, ok := in.(Get); ok && rnd.Intn(4) == 0 {
		if p, ok := s.prev[g.Key]; ok {
			return p
		}
	}
	if isKVWrite(in) {
		s.prev[kvKey(in)] = s.memStore.apply(Get{kvKey(in)}).(GetResult)
	}
	return s.memStore.apply(in)
}

func TestCheckerFindsAnomaliesOfAStaleCache(t *testing.T) {
	store := &staleStore{memStore: &memStore{values: map[string]string{}, version: map[string]uint64{}}, prev: map[string]GetResult{}}
	s := newScript()
	rnd := rand.New(rand.NewSource(1))
	for i := range 200 {
		in := randomInput(rnd, 0, i)
		s.ok(0, in, store.apply(in, rnd))
	}
	rep := s.check(t, Options{})
	require.False(t, rep.Ok())
	require.Positive(t, rep.Count(StaleRead)+rep.Count(LostWrite), "%v", rep)
	for _, a := range rep.Anomalies {
		require.Contains(t, []Kind{StaleRead, LostWrite, NonLinearizable}, a.Kind, "%v", a)
	}
}
