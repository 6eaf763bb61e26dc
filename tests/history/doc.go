// Package history records what clients of S-Chain did and checks the whole
// record against a model, as etcd's robustness tests and Jepsen do. It is
// for the fault tests (tests/e2e and its successors) and the torture run
// (`make torture`): their clients record every operation here, the nemesis
// injects faults, and Check tells whether anything the clients saw breaks a
// promise the docs make.
//
// # Recording
//
// A Recorder takes the time from an injected Clock (monotonic nanoseconds)
// and is safe for concurrent clients. A client calls Invoke before it sends
// a request and completes the returned Handle exactly once: Ok with the
// result, Fail when the operation certainly did not take effect (a refusal,
// an error returned before anything was sent), or Info when the outcome is
// unknown (a timeout, a connection lost after sending). An operation never
// completed counts as Info. The checkers give an Info operation an open
// return time: it may take effect at any moment after its invocation, or
// never. Times are compared across clients, so every client of one history
// reads the same clock (one process's monotonic clock).
//
// Check runs every checker over a history:
//
//	rec := history.NewRecorder(clock)
//	h := rec.Invoke(client, history.Put{Key: k, Value: v})
//	reply, err := store.Put(ctx, k, v)
//	// then h.Ok(history.WriteResult{...}), h.Fail(err) or h.Info(err)
//	rep, err := history.Check(rec.History(), history.Options{VisualizationDir: dir})
//
// # The model and what each checker proves
//
// Key-value (the filer store's manifests and KV values: Get, Put,
// PutIfAbsent, PutIfVersion, Delete): a key is absent or live with a value
// and a version. Every successful write (a put, or a delete of a live key)
// gives the key a version strictly greater than its last one; the store's
// versions are not consecutive (they carry the block height), so the model
// does not assume +1, and a version of 0 in a result means "not reported".
// PutIfAbsent succeeds only on an absent key, PutIfVersion only on a live key
// at exactly the expected version, and a Delete of an absent key changes
// nothing. Each key's history is checked for linearizability by porcupine
// (partitioned per key): a pass proves that the operations on that key can be
// ordered, each at some instant between its invocation and its completion,
// so that every result is the model's. It does not prove anything across
// keys (no multi-key atomicity or snapshot). When a key fails, the checker
// names the failure where it can: a stale read is a read whose every possible
// source was overwritten, before the read was invoked, by an acknowledged
// write that completed after the source; a lost write is such an overwrite
// that no read ever observed. Other failures are reported as
// non-linearizable, and the failing keys' history is written out as
// porcupine's HTML visualisation (Options.VisualizationDir, named in
// Report.Visualization). Uncertain puts whose value no read returned, on a
// key where only gets, puts and unapplied deletes can follow them, are left
// out of porcupine's search: they change no verdict (see unobservable), and
// an uncertain operation, which never returns, would otherwise be
// concurrent with everything after it. With Options.Timeout, keys porcupine
// does not decide in time are listed in Report.Undecided, not passed.
//
// Lists (by prefix) span keys and get their own rule, not porcupine's. For
// every list it proves (1) no phantom: each returned entry was written with
// that value by an operation invoked before the list completed; (2) no stale
// entry: not every such write was replaced (overwritten with another value or
// deleted) by an acknowledged write that completed before the list was
// invoked; (3) no omission: a key whose writes all completed before the list
// was invoked, whose last writes (those no other acknowledged write of the
// key follows) are all puts, is in the list. It does not prove that a list is
// one atomic snapshot of keys written while it ran, nor anything about keys
// touched concurrently (including by uncertain writes invoked before it
// completed), nor pagination.
//
// Counters (Allocate, ReadCounter): the ranges [Base, Base+Count) that
// acknowledged allocations of one counter return are disjoint (no id issued
// twice), and each read's next id lies between the counter's start plus what
// was acknowledged before the read was invoked and the start plus what was
// attempted (invoked, except certain failures) before it completed. It does
// not model floors (an allocation with a floor may jump the counter) and it
// does not check that uncertain allocations issued nothing.
//
// Leases (Acquire, Renew, Release): by the documented rule a grant holds
// from its block's time to its expiry, [GrantMs, ExpiresMs), until a release
// ends it. Two grants of different tokens (hence of different holders or of
// one name in two processes) whose intervals overlap are a double grant; a
// token reused by another holder is one too; and the first grant of each
// token must carry a token strictly above every token granted before it on
// that range (fencing). A release ends its token's lease at its block's
// time; an uncertain one is taken to end it as early as it can have, at the
// token's latest acknowledged grant (a token is renewed only while it is
// held), so it never causes a false alarm. The checker sees only
// acknowledged grants: a
// grant whose answer was lost is not checked, and block times are taken as
// the chain reports them (a backdated block is only caught if its grant
// overlaps another).
package history
