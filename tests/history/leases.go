package history

import (
	"fmt"
	"sort"
)

// tokenLease is one fencing token's grants on a range.
type tokenLease struct {
	token      uint64
	grants     []Operation // by grant time
	start, end uint64      // [start, end) in block-time ms
}

func (l *tokenLease) first() Operation { return l.grants[0] }

func (l *tokenLease) lastGrantMs() uint64 {
	return l.grants[len(l.grants)-1].Result.(Grant).GrantMs
}

// holding is the grant of l in force at ms (the latest granted at or
// before it).
func (l *tokenLease) holding(ms uint64) Operation {
	op := l.first()
	for _, g := range l.grants {
		if g.Result.(Grant).GrantMs <= ms {
			op = g
		}
	}
	return op
}

// rangeLeases are one range's grants by token and its releases.
type rangeLeases struct {
	tokens   map[uint64]*tokenLease
	releases []Operation
}

// checkLeases checks every range, in name order.
func checkLeases(h History) []Anomaly {
	byRange := make(map[string]*rangeLeases)
	get := func(name string) *rangeLeases {
		if byRange[name] == nil {
			byRange[name] = &rangeLeases{tokens: make(map[uint64]*tokenLease)}
		}
		return byRange[name]
	}
	for _, op := range h {
		switch in := op.Input.(type) {
		case Acquire:
			get(in.Range).addGrant(op)
		case Renew:
			get(in.Range).addGrant(op)
		case Release:
			if op.Status == Ok || op.open() {
				r := get(in.Range)
				r.releases = append(r.releases, op)
			}
		}
	}
	names := make([]string, 0, len(byRange))
	for n := range byRange {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Anomaly
	for _, n := range names {
		out = append(out, byRange[n].check(n)...)
	}
	return out
}

func (r *rangeLeases) addGrant(op Operation) {
	if op.Status != Ok {
		return
	}
	g := op.Result.(Grant)
	l := r.tokens[g.Token]
	if l == nil {
		l = &tokenLease{token: g.Token, start: g.GrantMs, end: g.ExpiresMs}
		r.tokens[g.Token] = l
	}
	l.grants = append(l.grants, op)
	l.start, l.end = min(l.start, g.GrantMs), max(l.end, g.ExpiresMs)
}

func (r *rangeLeases) check(name string) []Anomaly {
	leases := r.leases()
	r.applyReleases()
	var out []Anomaly
	for _, l := range leases {
		out = append(out, sharedToken(name, l)...)
	}
	out = append(out, overlaps(name, leases)...)
	return append(out, fencing(name, leases)...)
}

// leases are the tokens' leases by start, then token, each with its grants
// by grant time.
func (r *rangeLeases) leases() []*tokenLease {
	out := make([]*tokenLease, 0, len(r.tokens))
	for _, l := range r.tokens {
		sort.SliceStable(l.grants, func(i, j int) bool {
			return l.grants[i].Result.(Grant).GrantMs < l.grants[j].Result.(Grant).GrantMs
		})
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start < out[j].start
		}
		return out[i].token < out[j].token
	})
	return out
}

// applyReleases ends each released token's lease: an answered release at
// its time, an uncertain one at the token's latest grant (the earliest it
// can have ended, since every grant of the token was answered while it was
// held). A lease never ends before its latest grant.
func (r *rangeLeases) applyReleases() {
	for _, rel := range r.releases {
		l := r.tokens[rel.Input.(Release).Token]
		if l == nil {
			continue
		}
		at := l.lastGrantMs()
		if rel.Status == Ok {
			at = max(at, rel.Result.(ReleaseResult).AtMs)
		}
		l.end = min(l.end, at)
	}
}

// sharedToken reports a token granted to two holders.
func sharedToken(name string, l *tokenLease) []Anomaly {
	first := l.first()
	for _, g := range l.grants[1:] {
		if h := g.Result.(Grant).Holder; h != first.Result.(Grant).Holder {
			return []Anomaly{{Kind: DoubleGrant, Subject: name, Ops: []Operation{first, g},
				Detail: fmt.Sprintf("token %d granted to %q and to %q", l.token, first.Result.(Grant).Holder, h)}}
		}
	}
	return nil
}

// overlaps reports each lease that starts before the furthest-reaching
// earlier lease of another token ended.
func overlaps(name string, leases []*tokenLease) []Anomaly {
	var out []Anomaly
	var reach *tokenLease
	for _, l := range leases {
		if l.start >= l.end {
			continue
		}
		if reach != nil && l.start < reach.end {
			held := reach.holding(l.start)
			out = append(out, Anomaly{Kind: DoubleGrant, Subject: name, Ops: []Operation{held, l.first()},
				Detail: fmt.Sprintf("token %d granted at %d ms while token %d held until %d ms", l.token, l.start, reach.token, reach.end)})
		}
		if reach == nil || l.end > reach.end {
			reach = l
		}
	}
	return out
}

// fencing reports each token not above every token granted before it.
func fencing(name string, leases []*tokenLease) []Anomaly {
	var out []Anomaly
	var top *tokenLease
	for _, l := range leases {
		if top != nil && l.token <= top.token && l.start > top.start {
			out = append(out, Anomaly{Kind: TokenNotIncreasing, Subject: name, Ops: []Operation{top.first(), l.first()},
				Detail: fmt.Sprintf("token %d granted at %d ms after token %d at %d ms", l.token, l.start, top.token, top.start)})
		}
		if top == nil || l.token > top.token {
			top = l
		}
	}
	return out
}
