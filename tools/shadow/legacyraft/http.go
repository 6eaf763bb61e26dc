package legacyraft

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hashicorp/raft"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

// Status is the /status answer: who leads each group, in which term.
type Status struct {
	ID            string        `json:"id"`
	Mode          Mode          `json:"mode"`
	Leader        string        `json:"leader"`
	LeaderHTTP    string        `json:"leader_http"`
	Term          uint64        `json:"term"`
	State         string        `json:"state"`
	RouteRevision uint64        `json:"route_revision,omitempty"`
	Groups        []GroupStatus `json:"groups"`
}

// GroupStatus is one raft group as this node observes it.
type GroupStatus struct {
	Group  int    `json:"group"`
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
	State  string `json:"state"`
}

// Status reports this node's view of every group; Leader, Term and State
// summarise group 0.
func (n *Node) Status() Status {
	s := Status{ID: n.cfg.ID, Mode: n.cfg.Mode}
	if t := n.routes.load(); t != nil {
		s.RouteRevision = t.Revision()
	}
	for _, g := range n.groups {
		s.Groups = append(s.Groups, GroupStatus{Group: g.id, Leader: g.leader(), Term: g.raft.CurrentTerm(), State: g.raft.State().String()})
	}
	if len(s.Groups) > 0 {
		s.Leader, s.Term, s.State = s.Groups[0].Leader, s.Groups[0].Term, s.Groups[0].State
		if p, ok := n.cfg.peer(s.Leader); ok {
			s.LeaderHTTP = p.HTTPAddr
		}
	}
	return s
}

// IsLeader reports whether this node leads group g.
func (n *Node) IsLeader(g int) bool { return n.groups[g].raft.State() == raft.Leader }

// Handler serves /allocate?range=&count=, /written?range=&max= and /status.
// A follower forwards /allocate and /written to the leader unless the
// request was itself forwarded.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(pathAllocate, n.serveAllocate)
	mux.HandleFunc(pathWritten, n.serveWritten)
	mux.HandleFunc(pathStatus, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, n.Status())
	})
	return mux
}

func (n *Node) serveAllocate(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	count, err := strconv.ParseUint(q.Get("count"), 10, 64)
	if err != nil {
		writeError(w, fmt.Errorf("%w: count: %w", legacy.ErrRejected, err))
		return
	}
	var (
		res    legacy.Result
		leader string
	)
	if r.Header.Get(headerForwarded) != "" {
		res, err = n.AllocateLocal(r.Context(), q.Get("range"), count)
	} else {
		res, leader, err = n.allocateOrForward(r.Context(), q.Get("range"), count)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if leader != "" {
		w.Header().Set(headerLeader, leader)
	}
	writeJSON(w, http.StatusOK, res)
}

func (n *Node) serveWritten(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	maxWritten, err := strconv.ParseUint(q.Get("max"), 10, 64)
	if err != nil {
		writeError(w, fmt.Errorf("%w: max: %w", legacy.ErrRejected, err))
		return
	}
	var leader string
	if r.Header.Get(headerForwarded) != "" {
		err = n.reportWrittenLocal(q.Get("range"), maxWritten)
	} else {
		leader, err = n.reportOrForward(r.Context(), q.Get("range"), maxWritten)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if leader != "" {
		w.Header().Set(headerLeader, leader)
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeError(w http.ResponseWriter, err error) {
	code, body := encodeError(err)
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
