package objload

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// memServer is an object store over HTTP that refuses the first PUTs.
type memServer struct {
	mu      sync.Mutex
	objects map[string][]byte
	refuse  atomic.Int64
}

func (m *memServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		if m.refuse.Add(-1) >= 0 {
			http.Error(w, "master gone", http.StatusInternalServerError)
			return
		}
		b, _ := io.ReadAll(r.Body)
		m.objects[r.URL.Path] = b
	case http.MethodGet:
		b, ok := m.objects[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}
}

func TestRunRetriesAndVerifyFindsWhatIsMissing(t *testing.T) {
	require := require.New(t)
	srv := &memServer{objects: map[string][]byte{}}
	srv.refuse.Store(5)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	store := NewHTTPStore(hs.URL + "/bucket")
	cfg := DefaultConfig("run")
	cfg.Workers, cfg.Retry, cfg.PutTimeout = 3, time.Millisecond, 10*time.Second
	r, err := New(store, cfg)
	require.NoError(err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- r.Run(ctx) }()
	require.Eventually(func() bool { s := r.Snapshot(); return len(s.Puts) >= 30 && len(s.Failures) == 5 }, 10*time.Second, time.Millisecond)
	cancel()
	res := <-done
	require.Len(res.Failures, 5, "each refused PUT is a failed attempt")
	require.Zero(res.FinalFailures(), "and each was retried to its acknowledgement")
	retried := 0
	for _, p := range res.Puts {
		require.True(strings.HasPrefix(p.Key, "run/w0"), p.Key)
		require.Equal(p.Done.Sub(p.Start), p.Wait)
		if p.Attempts > 1 {
			retried++
		}
	}
	require.Positive(retried)
	require.Equal(res.Longest(res.Start, res.End), maxWait(res), "the acknowledged PUTs' longest, or a cut one's wait until the end")

	c := Verify(context.Background(), store, res, 4)
	require.NoError(c.Err())
	require.Equal(len(res.Puts), c.ReadBack)

	srv.mu.Lock()
	delete(srv.objects, "/bucket/"+res.Puts[0].Key)
	srv.objects["/bucket/"+res.Puts[1].Key] = []byte("other bytes")
	srv.mu.Unlock()
	c = Verify(context.Background(), store, res, 4)
	require.Equal(1, c.Lost)
	require.Equal(1, c.Altered)
	require.Error(c.Err())
}

func maxWait(res Result) time.Duration {
	var d time.Duration
	for _, p := range res.Puts {
		d = max(d, p.Wait)
	}
	for _, start := range res.Cut {
		d = max(d, res.End.Sub(start))
	}
	return d
}

func TestAnObjectGivesUpAtItsBound(t *testing.T) {
	srv := &memServer{objects: map[string][]byte{}}
	srv.refuse.Store(1 << 40)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cfg := DefaultConfig("down")
	cfg.Workers, cfg.Retry, cfg.PutTimeout = 1, 5*time.Millisecond, 50*time.Millisecond
	r, err := New(NewHTTPStore(hs.URL+"/b"), cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- r.Run(ctx) }()
	require.Eventually(t, func() bool { return r.Snapshot().FinalFailures() >= 2 }, 10*time.Second, time.Millisecond)
	cancel()
	res := <-done
	require.Empty(t, res.Puts)
	require.Len(t, res.Cut, 1, "the object in flight at the end")
	require.Equal(t, res.End.Sub(res.Cut[0]), res.Longest(res.Start, res.End), "a cut PUT waited until the end")
}

func TestLongestCountsFromTheWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	res := Result{Start: t0, End: at(30), Puts: []Put{
		{Start: at(0), Done: at(13), Wait: 13 * time.Second}, // stuck since the start, through the kill at 12
		{Start: at(12.1), Done: at(12.4), Wait: 300 * time.Millisecond},
		{Start: at(20), Done: at(20.1), Wait: 100 * time.Millisecond},
	}, Cut: []time.Time{at(29.5)}}
	require.Equal(t, time.Second, res.Longest(at(12), at(15)), "the stuck PUT waited a second after the kill")
	require.Equal(t, 13*time.Second, res.Longest(at(0), at(15)))
	require.Equal(t, 500*time.Millisecond, res.Longest(at(19), at(30)), "a cut PUT waited until the end")
}
