package legacyraft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// shutdownGrace bounds how long Serve waits for in-flight HTTP requests.
const shutdownGrace = 5 * time.Second

// Serve runs one node as a process would (`schain legacy serve`): raft on
// cfg.Bind, the HTTP API on cfg.HTTPBind, until ctx is cancelled.
func Serve(ctx context.Context, cfg Config, opts Options) error {
	ln, err := net.Listen("tcp", cfg.HTTPBind)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTPBind, err)
	}
	n, err := New(cfg, opts)
	if err != nil {
		_ = ln.Close()
		return err
	}
	srv := &http.Server{Handler: n.Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return errors.Join(err, srv.Shutdown(sctx), n.Close())
}
