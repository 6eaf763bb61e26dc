package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// ErrDirectAPI: the chain config's directAPI address could not be listened
// on (in use, not this machine's).
var ErrDirectAPI = errors.New("rpc: cannot serve the direct API")

// direct is the plugin's own HTTP server for the API (chain config
// directAPI). A request through the node crosses the node's HTTP server and
// rpcchainvm's HTTP-over-gRPC hop before it reaches the handler; for a
// pooled allocation, answered from memory in tens of microseconds, those
// hops are most of the cost. The handler is the same one, tokens and limits
// included, so the two doors differ only in what is in front of them.
type direct struct {
	srv    *http.Server
	uri    string
	served chan error
}

// Bounds of the direct server's connections. A request's own wait is
// bounded by the API (maxWaitMs); these only keep slow or idle clients
// from holding connections forever.
const (
	directReadHeaderTimeout = 10 * time.Second
	directReadTimeout       = 30 * time.Second
	directIdleTimeout       = 2 * time.Minute
	directMaxHeaderBytes    = 64 << 10
	directShutdown          = 5 * time.Second
)

// serveDirect listens on addr and serves the API at /ext/bc/<chainID>, the path
// clients already use. The advertised URI keeps addr's host and takes the
// port the listener got (addr may ask for port 0).
func (s *Server) serveDirect(addr string) (*direct, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrDirectAPI, addr, err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("%w at %s: %w", ErrDirectAPI, addr, err)
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("%w at %s: %w", ErrDirectAPI, addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ext/bc/"+s.cfg.ChainID.String(), s.handler)
	d := &direct{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: directReadHeaderTimeout,
			ReadTimeout:       directReadTimeout,
			IdleTimeout:       directIdleTimeout,
			MaxHeaderBytes:    directMaxHeaderBytes,
		},
		uri:    "http://" + net.JoinHostPort(host, port),
		served: make(chan error, 1),
	}
	go func() {
		err := d.srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			// Only a broken listener gets here: clients of the direct API
			// must fall back to the node's until the node restarts.
			s.cfg.Log.Error("the direct API stopped serving", zap.String("uri", d.uri), zap.Error(err))
		}
		d.served <- err
	}()
	s.cfg.Log.Info("serving the API directly", zap.String("uri", d.uri+"/ext/bc/"+s.cfg.ChainID.String()))
	return d, nil
}

// close stops accepting, lets requests in flight finish for a moment, then
// cuts the rest.
func (d *direct) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), directShutdown)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, d.srv.Close())
	}
	if served := <-d.served; !errors.Is(served, http.ErrServerClosed) {
		err = errors.Join(err, served)
	}
	return err
}
