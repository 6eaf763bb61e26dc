package history

import "testing"

// script records a history one step at a time: every clock reading is one
// tick later than the last, so the order of the calls is the order of the
// times.
type script struct {
	r   *Recorder
	now int64
}

func newScript() *script {
	s := &script{}
	s.r = NewRecorder(func() int64 { s.now++; return s.now })
	return s
}

// ok records an operation invoked and answered before the next one.
func (s *script) ok(client int, in Input, res Result) {
	s.r.Invoke(client, in).Ok(res)
}

func (s *script) check(t *testing.T, opts Options) Report {
	t.Helper()
	rep, err := Check(s.r.History(), opts)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return rep
}

func applied(v uint64) WriteResult { return WriteResult{Applied: true, Version: v} }

func found(value string, v uint64) GetResult {
	return GetResult{Found: true, Value: value, Version: v}
}

func grant(holder string, token, at, expires uint64) Grant {
	return Grant{Holder: holder, Token: token, GrantMs: at, ExpiresMs: expires}
}

func kinds(rep Report) map[Kind]int { return rep.ByKind() }
