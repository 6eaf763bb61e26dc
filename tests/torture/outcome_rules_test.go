package torture

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

// These tests need no network: they hold the recording rules of
// outcome_test.go against canned answers, since a wrong Fail makes a false
// anomaly.

// answers serves one canned JSON-RPC answer per request, in order; a nil
// answer hangs up without answering.
func answers(t *testing.T, seq ...any) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decoding the request: %v", err)
		}
		i := int(n.Add(1)) - 1
		if i >= len(seq) {
			t.Errorf("request %d: only %d answers", i, len(seq))
			return
		}
		out := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch a := seq[i].(type) {
		case nil:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		case *api.Error:
			out["error"] = a
		default:
			out["result"] = a
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testClient(t *testing.T, uri string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.HTTPClient = httpClient()
	c, err := client.New(uri, "chain", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func put(ctx context.Context, c *client.Client) error {
	_, err := c.PutManifest(ctx, api.PutManifestArgs{Bucket: "b", Key: "k", Wait: api.WaitAccepted})
	return err
}

func TestOutcomeOfOneAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer any
		want   outcome
	}{
		{"success", api.PutManifestReply{Version: 7}, outcomeOk},
		{"precondition failed", api.NewError(api.CodePreconditionFailed, "precondition_failed", nil), outcomePrecondition},
		{"not owner", api.NewError(api.CodeNotOwner, "not owner", nil), outcomeRefused},
		{"lease held", api.NewError(api.CodeLeaseHeld, "held", nil), outcomeRefused},
		{"invalid params", api.NewError(api.CodeInvalidParams, "bad", nil), outcomeRefused},
		{"not ready", api.NewError(api.CodeNotReady, "not ready", nil), outcomeUnknown},
		{"timeout", api.NewError(api.CodeTimeout, "timeout", nil), outcomeUnknown},
		{"rejected", api.NewError(api.CodeRejected, "rejected", nil), outcomeUnknown},
		{"unknown", api.NewError(api.CodeUnknown, "boom", nil), outcomeUnknown},
		{"hung up", nil, outcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, answers(t, tc.answer).URL)
			ctx, s := withTracker(context.Background())
			if got := classifyWrite(put(ctx, c), s); got != tc.want {
				t.Errorf("outcome %d, want %d", got, tc.want)
			}
		})
	}
}

// A write sent again after an answer that was not a refusal may have
// applied the first time: whatever the last answer, it is uncertain.
func TestOutcomeOfARetriedWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first any
		want  outcome
	}{
		{"after a refusal", api.NewError(api.CodeNotOwner, "not owner", nil), outcomePrecondition},
		{"after a success", api.PutManifestReply{Version: 7}, outcomeUnknown},
		{"after not ready", api.NewError(api.CodeNotReady, "not ready", nil), outcomeUnknown},
		{"after a lost answer", nil, outcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, answers(t, tc.first, api.NewError(api.CodePreconditionFailed, "precondition_failed", nil)).URL)
			ctx, s := withTracker(context.Background())
			_ = put(ctx, c)
			if got := classifyWrite(put(ctx, c), s); got != tc.want {
				t.Errorf("outcome %d, want %d", got, tc.want)
			}
		})
	}
}

// A read in the operation (a receipt, a node's identity) counts only when
// its answer is lost; a dial that failed sent nothing.
func TestOutcomeIgnoresReadsAndFailedDials(t *testing.T) {
	c := testClient(t, answers(t, api.NewError(api.CodeNotFound, "not found", nil), api.NewError(api.CodeLeaseLost, "lost", nil)).URL)
	ctx, s := withTracker(context.Background())
	if _, err := c.GetManifest(ctx, "b", "k"); err == nil {
		t.Fatal("the read succeeded")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()
	if err := put(ctx, testClient(t, closed)); err == nil {
		t.Fatal("a write to a closed port succeeded")
	}
	if got := classifyWrite(put(ctx, c), s); got != outcomeRefused {
		t.Errorf("outcome %d, want a refusal", got)
	}
}

// A write answered after an exchange of it that may have applied is
// reported as retried, with what happened to that exchange.
func TestRetriedWrites(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second any
		want          bool
	}{
		{"a success after a success", api.PutManifestReply{Version: 7}, api.PutManifestReply{Version: 8}, true},
		{"a refusal after a lost answer", nil, api.NewError(api.CodePreconditionFailed, "precondition_failed", nil), true},
		{"a success after a refusal", api.NewError(api.CodeNotOwner, "not owner", nil), api.PutManifestReply{Version: 8}, false},
		{"a refusal after a refusal", api.NewError(api.CodeNotOwner, "not owner", nil), api.NewError(api.CodeLeaseHeld, "held", nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, answers(t, tc.first, tc.second).URL)
			ctx, s := withTracker(context.Background())
			_ = put(ctx, c)
			err := put(ctx, c)
			if got := retried(err, s); got != tc.want {
				t.Errorf("retried %t, want %t (exchanges: %q)", got, tc.want, s.what())
			}
			if tc.want && len(s.what()) == 0 {
				t.Error("no exchange named")
			}
		})
	}
}
