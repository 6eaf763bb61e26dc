package legacyraft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// shutdownGrace bounds how long Serve waits for in-flight HTTP requests.
const shutdownGrace = 5 * time.Second

// errRequestsInFlight: requests were still running when the grace ended.
var errRequestsInFlight = errors.New("legacyraft: HTTP requests still in flight at shutdown")

// Serve runs one node as a process would (`schain legacy serve`): raft on
// cfg.Bind, the HTTP API on cfg.HTTPBind, until ctx is cancelled.
func Serve(ctx context.Context, cfg Config, opts Options) error {
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.HTTPBind); err != nil {
			return fmt.Errorf("listen %s: %w", cfg.HTTPBind, err)
		}
	}
	n, err := New(cfg, opts)
	if err != nil {
		_ = ln.Close()
		return err
	}
	var inFlight atomic.Int64
	handler := n.Handler()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		handler.ServeHTTP(w, r)
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, drain(srv, &inFlight, shutdownGrace), n.Close())
}

// drain stops srv once no request is in flight, waiting at most grace. It
// counts requests, not connections: http.Server.Shutdown treats a
// connection that has not sent a request yet (a client's spare keep-alive
// dial) as busy for its first 5 s, which made a shutdown with in-flight
// nothing fail its deadline on a loaded machine.
func drain(srv *http.Server, inFlight *atomic.Int64, grace time.Duration) error {
	srv.SetKeepAlivesEnabled(false)
	deadline := time.Now().Add(grace)
	for inFlight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	left := inFlight.Load()
	closeErr := srv.Close()
	if left > 0 {
		return errors.Join(fmt.Errorf("%w: %d after %v", errRequestsInFlight, left, grace), closeErr)
	}
	return closeErr
}
