package seaweed

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
)

// fakeMaster serves /cluster/status and /dir/assign like a SeaweedFS master
// whose answers the test scripts.
type fakeMaster struct {
	srv *httptest.Server

	mu      sync.Mutex
	leader  string // reported by /cluster/status; "" while none is known
	answer  func(q url.Values) (int, any)
	queries []url.Values
}

func newFakeMaster(t *testing.T) *fakeMaster {
	m := &fakeMaster{}
	mux := http.NewServeMux()
	mux.HandleFunc("/cluster/status", func(w http.ResponseWriter, _ *http.Request) {
		m.mu.Lock()
		leader := m.leader
		m.mu.Unlock()
		// The real master reports addresses with the gRPC port appended.
		writeJSONAnswer(w, http.StatusOK, map[string]any{
			"IsLeader": leader == m.addr(), "Leader": leader + ".19333", "MaxVolumeId": 7,
		})
	})
	mux.HandleFunc("/dir/assign", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.queries = append(m.queries, r.URL.Query())
		answer := m.answer
		m.mu.Unlock()
		code, body := answer(r.URL.Query())
		writeJSONAnswer(w, code, body)
	})
	m.srv = httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(m.srv.Close)
	return m
}

func writeJSONAnswer(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if s, ok := body.(string); ok {
		_, _ = w.Write([]byte(s))
		return
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (m *fakeMaster) addr() string { return strings.TrimPrefix(m.srv.URL, "http://") }

func (m *fakeMaster) set(leader string, answer func(url.Values) (int, any)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leader, m.answer = leader, answer
}

func (m *fakeMaster) assigns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queries)
}

// sequencer answers like a leader: keys from an in-memory counter that
// starts at 1, as SeaweedFS's memory sequencer does.
func sequencer() func(url.Values) (int, any) {
	var mu sync.Mutex
	next := uint64(1)
	return func(q url.Values) (int, any) {
		mu.Lock()
		defer mu.Unlock()
		var n uint64
		for _, c := range q.Get("count") {
			n = n*10 + uint64(c-'0')
		}
		fid := FileID{Volume: 3, Key: next, Cookie: 0x637037d6}
		next += n
		return http.StatusOK, map[string]any{"fid": fid.String(), "url": "127.0.0.1:8080", "publicUrl": "127.0.0.1:8080", "count": n}
	}
}

func fixed(code int, body any) func(url.Values) (int, any) {
	return func(url.Values) (int, any) { return code, body }
}

// deadAddr returns a 127.0.0.1 address nobody listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func newTestClient(t *testing.T, masters ...string) *Client {
	cfg := DefaultConfig(masters...)
	cfg.RequestTimeout = 2 * time.Second
	cfg.DialTimeout = 500 * time.Millisecond
	cfg.LeaderRefresh = time.Hour // refreshed by unavailability only, so tests are deterministic
	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestAssignParsesAnswer(t *testing.T) {
	require := require.New(t)
	m := newFakeMaster(t)
	m.set(m.addr(), sequencer())
	c := newTestClient(t, m.addr())

	a, err := c.Assign(context.Background(), "photos/2026", 5)
	require.NoError(err)
	require.Equal(FileID{Volume: 3, Key: 1, Cookie: 0x637037d6}, a.FileID)
	require.Equal(uint64(5), a.Count)
	require.Equal("127.0.0.1:8080", a.URL)
	require.Equal(m.addr(), a.Master)
	require.Equal(legacy.Result{First: 1, Count: 5, Leader: m.addr(), Term: 1}, a.Result())
	require.Equal(url.Values{"count": {"5"}, "collection": {"photos"}, "dataSize": {"1"}}, m.queries[0])

	res, err := c.Allocate(context.Background(), "photos", 2)
	require.NoError(err)
	require.Equal(legacy.Result{First: 6, Count: 2, Leader: m.addr(), Term: 1}, res)
}

func TestClassification(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		body   any
		want   error
		class  error
		failed bool // the master was unreachable
	}{
		{name: "warming up", code: 503, body: map[string]string{"error": "master is warming up, topology is still loading"}, want: ErrWarmingUp, class: legacy.ErrUnavailable},
		{name: "growth in progress", code: 503, body: map[string]string{"error": "no writable volumes for x, volume growth in progress"}, want: ErrNoWritableVolume, class: legacy.ErrUnavailable},
		{name: "proxy to dead leader", code: 502, body: "", want: ErrNoLeader, class: legacy.ErrUnavailable},
		{name: "no free volumes", code: 406, body: map[string]string{"error": "failed to find writable volumes for collection:c replication:000 ttl: error: No writable volumes and no free volumes left for c"}, want: ErrNoWritableVolume, class: legacy.ErrUnavailable},
		{name: "request timeout", code: 408, body: map[string]string{"error": "request timeout"}, want: ErrTimeout, class: legacy.ErrUnavailable},
		{name: "bad replication", code: 406, body: map[string]string{"error": "unknown replication type"}, want: ErrAssignRejected, class: legacy.ErrRejected},
		{name: "unknown data center", code: 400, body: map[string]string{"error": "data center x not found in topology"}, want: ErrAssignRejected, class: legacy.ErrRejected},
		{name: "leader url", code: 500, body: "Leader URL parse error", want: ErrAssignRejected, class: legacy.ErrRejected},
		{name: "error in 200", code: 200, body: map[string]string{"error": "No writable volumes"}, want: ErrNoWritableVolume, class: legacy.ErrUnavailable},
		{name: "bad fid", code: 200, body: map[string]any{"fid": "3,01637037D6", "count": 1}, want: ErrFidCookie, class: legacy.ErrRejected},
		{name: "no count", code: 200, body: map[string]any{"fid": "3,01637037d6"}, want: ErrMalformedAnswer, class: legacy.ErrRejected},
		{name: "not json", code: 200, body: "<html>", want: ErrMalformedAnswer, class: legacy.ErrRejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require := require.New(t)
			m := newFakeMaster(t)
			m.set(m.addr(), fixed(tt.code, tt.body))
			c := newTestClient(t, m.addr())
			_, err := c.Allocate(context.Background(), "r", 1)
			require.ErrorIs(err, tt.want)
			require.ErrorIs(err, tt.class)
			other := legacy.ErrUnavailable
			if tt.class == legacy.ErrUnavailable {
				other = legacy.ErrRejected
			}
			require.NotErrorIs(err, other, "exactly one class")
		})
	}
}

func TestRejectsBadRequestsWithoutContact(t *testing.T) {
	require := require.New(t)
	m := newFakeMaster(t)
	m.set(m.addr(), sequencer())
	c := newTestClient(t, m.addr())
	for _, count := range []uint64{0, 1<<20 + 1} {
		_, err := c.Allocate(context.Background(), "r", count)
		require.ErrorIs(err, ErrBadCount)
		require.ErrorIs(err, legacy.ErrRejected)
	}
	_, err := c.Allocate(context.Background(), "", 1)
	require.ErrorIs(err, legacy.ErrRejected)
	require.Zero(m.assigns())
}

func TestConfigValidate(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"no masters":  func(c *Config) { c.Masters = nil },
		"bad master":  func(c *Config) { c.Masters = []string{"http://127.0.0.1:9333"} },
		"no timeout":  func(c *Config) { c.RequestTimeout = 0 },
		"no refresh":  func(c *Config) { c.LeaderRefresh = 0 },
		"zero max":    func(c *Config) { c.MaxCount = 0 },
		"no dial max": func(c *Config) { c.DialTimeout = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig("127.0.0.1:9333")
			mutate(&cfg)
			_, err := New(cfg)
			require.Error(t, err) //nolint:forbidigo // any validation error
		})
	}
	require.NoError(t, DefaultConfig("127.0.0.1:9333").Validate())
}

// TestFailover walks a leader change: the leader dies, followers proxy to
// it (502), a new leader warms up (503), then serves keys from a fresh
// sequencer: the known reissue, which the comparator classifies as such.
func TestFailover(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	m1, m2, m3 := newFakeMaster(t), newFakeMaster(t), newFakeMaster(t)
	lead1 := sequencer()
	for _, m := range []*fakeMaster{m1, m2, m3} {
		m.set(m1.addr(), lead1) // followers proxy to the leader
	}
	c := newTestClient(t, m3.addr(), m2.addr(), m1.addr())

	first, err := c.Allocate(ctx, "r", 10)
	require.NoError(err)
	require.Equal(legacy.Result{First: 1, Count: 10, Leader: m1.addr(), Term: 1}, first)
	require.Equal(1, m1.assigns(), "the known leader is tried first")
	require.Zero(m3.assigns())

	// The leader dies; the followers still believe in it and their proxy
	// answers 502.
	m1.srv.Close()
	m2.set(m1.addr(), fixed(http.StatusBadGateway, ""))
	m3.set("", fixed(http.StatusBadGateway, ""))
	_, err = c.Allocate(ctx, "r", 10)
	require.ErrorIs(err, ErrNoLeader)
	require.ErrorIs(err, legacy.ErrUnavailable)
	require.Contains(err.Error(), "master unreachable", "the dead leader's failure is kept for investigation")
	require.Equal(1, m2.assigns())
	require.Equal(1, m3.assigns())

	// m2 is elected and warms up; m3 proxies to it.
	warm := fixed(http.StatusServiceUnavailable, map[string]string{"error": "master is warming up, topology is still loading"})
	m2.set(m2.addr(), warm)
	m3.set(m2.addr(), warm)
	_, err = c.Allocate(ctx, "r", 10)
	require.ErrorIs(err, ErrWarmingUp)
	leader, term := c.Leader()
	require.Equal(m2.addr(), leader)
	require.Equal(uint64(2), term)

	// Warm: m2 serves from a sequencer that never saw the old leader's
	// unwritten keys.
	lead2 := sequencer()
	m2.set(m2.addr(), lead2)
	m3.set(m2.addr(), lead2)
	second, err := c.Allocate(ctx, "r", 10)
	require.NoError(err)
	require.Equal(legacy.Result{First: 1, Count: 10, Leader: m2.addr(), Term: 2}, second)

	// The comparator calls it the known defect, not an anomaly.
	cfg := shadow.DefaultConfig()
	cfg.LegacySharedKeySpace = true
	comp, err := shadow.NewComparator(cfg)
	require.NoError(err)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, res := range []legacy.Result{first, second} {
		comp.Observe(shadow.Observation{
			Request: shadow.Request{Seq: uint64(i + 1), Range: "r", Count: 10},
			At:      at.Add(time.Duration(i) * time.Second),
			Legacy:  shadow.LegacySide{Result: res},
			SChain:  shadow.SChainSide{Result: shadow.SChainResult{Base: 1 + 10*uint64(i), Count: 10}},
		})
	}
	rep := comp.Report()
	require.Equal(uint64(1), rep.Counts[shadow.KindLegacyReissue])
	require.Zero(rep.Counts[shadow.KindLegacyDuplicate])
}

func TestUnreachableMastersAreSkipped(t *testing.T) {
	require := require.New(t)
	m := newFakeMaster(t)
	m.set(m.addr(), sequencer())
	c := newTestClient(t, deadAddr(t), deadAddr(t), m.addr())
	res, err := c.Allocate(context.Background(), "r", 1)
	require.NoError(err)
	require.Equal(uint64(1), res.First)
	require.Equal(m.addr(), res.Leader)
}

func TestRejectionIsNotFailedOver(t *testing.T) {
	require := require.New(t)
	m1, m2 := newFakeMaster(t), newFakeMaster(t)
	m1.set(m1.addr(), fixed(http.StatusBadRequest, map[string]string{"error": "rack x not found in topology"}))
	m2.set(m1.addr(), sequencer())
	c := newTestClient(t, m1.addr(), m2.addr())
	_, err := c.Allocate(context.Background(), "r", 1)
	require.ErrorIs(err, legacy.ErrRejected)
	require.Zero(m2.assigns())
}

func TestRejectionAfterOutageDecidesClass(t *testing.T) {
	require := require.New(t)
	m1, m2 := newFakeMaster(t), newFakeMaster(t)
	m1.set(m1.addr(), fixed(http.StatusServiceUnavailable, map[string]string{"error": "master is warming up"}))
	m2.set(m1.addr(), fixed(http.StatusBadRequest, map[string]string{"error": "rack x not found in topology"}))
	c := newTestClient(t, m1.addr(), m2.addr())
	_, err := c.Allocate(context.Background(), "r", 1)
	require.ErrorIs(err, ErrAssignRejected)
	require.NotErrorIs(err, legacy.ErrUnavailable)
	require.Contains(err.Error(), "warming up")
}

func TestAllUnreachable(t *testing.T) {
	require := require.New(t)
	c := newTestClient(t, deadAddr(t), deadAddr(t))
	_, err := c.Allocate(context.Background(), "r", 1)
	require.ErrorIs(err, ErrUnreachable)
	require.ErrorIs(err, legacy.ErrUnavailable)
	leader, term := c.Leader()
	require.Empty(leader)
	require.Zero(term)
}

// hangingMaster accepts requests and answers only when the client gives up.
func hangingMaster(t *testing.T) string {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestContextCancelStopsFailover(t *testing.T) {
	require := require.New(t)
	m := newFakeMaster(t)
	m.set(m.addr(), sequencer())
	cfg := DefaultConfig(hangingMaster(t), m.addr())
	cfg.RequestTimeout = time.Minute
	c, err := New(cfg)
	require.NoError(err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Allocate(ctx, "r", 1)
	require.ErrorIs(err, context.DeadlineExceeded)
	require.ErrorIs(err, legacy.ErrUnavailable)
	require.Less(time.Since(start), 10*time.Second)
	require.Zero(m.assigns(), "no failover once the caller gave up")
}

func TestRequestTimeoutFailsOver(t *testing.T) {
	require := require.New(t)
	m := newFakeMaster(t)
	m.set(m.addr(), sequencer())
	cfg := DefaultConfig(hangingMaster(t), m.addr())
	cfg.RequestTimeout = 200 * time.Millisecond
	c, err := New(cfg)
	require.NoError(err)
	res, err := c.Allocate(context.Background(), "r", 1)
	require.NoError(err)
	require.Equal(uint64(1), res.First)
	require.Equal(1, m.assigns())
}

func TestStatusNormalisesAddresses(t *testing.T) {
	require := require.New(t)
	m := newFakeMaster(t)
	m.set(m.addr(), sequencer())
	c := newTestClient(t, m.addr())
	st, err := c.Status(context.Background(), m.addr())
	require.NoError(err)
	require.True(st.IsLeader)
	require.Equal(m.addr(), st.Leader)
	require.Equal(uint32(7), st.MaxVolumeID)
	require.Equal("127.0.0.1:9333", httpAddress("127.0.0.1:9333.19333"))
	require.Equal("127.0.0.1:9333", httpAddress("127.0.0.1:9333"))
	require.Equal("[::1]:9333", httpAddress("[::1]:9333.19333"))
	require.True(errors.Is(ErrUnreachable, legacy.ErrUnavailable))
}
