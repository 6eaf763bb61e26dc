// Package cpuprofile writes CPU profiles of this process one after another
// into a directory. The node profiles itself (--profile-continuous-enabled),
// but a VM plugin is a process of its own that the node's profiler never
// sees: without this, half of a per-request allocation's CPU (the plugin's
// share) could not be attributed to functions.
package cpuprofile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"
)

// ErrBadConfig wraps an unusable profiler configuration.
var ErrBadConfig = errors.New("cpuprofile: invalid configuration")

// Config says where and how often.
type Config struct {
	// Dir receives the profiles (created if missing).
	Dir string
	// Prefix starts every file name: <Prefix>.<n>.pprof, n counting up from
	// 0, so that the processes of several nodes can share one directory.
	Prefix string
	// Every is the length of one profile.
	Every time.Duration
	// MaxFiles bounds the complete profiles kept beside the one being
	// written: the oldest is removed when a newer one is complete.
	MaxFiles int
}

// Profiler writes one profile per tick until stopped.
type Profiler struct {
	cfg  Config
	stop context.CancelFunc
	done chan struct{}

	mu  sync.Mutex
	err error // the first error, after which the profiler stopped
}

// Start begins the first profile now and a new one every cfg.Every.
func Start(cfg Config) (*Profiler, error) {
	if cfg.Every <= 0 {
		return nil, fmt.Errorf("%w: every %v", ErrBadConfig, cfg.Every)
	}
	ticker := time.NewTicker(cfg.Every)
	p, err := start(cfg, ticker.C)
	if err != nil {
		ticker.Stop()
		return nil, err
	}
	go func() {
		<-p.done
		ticker.Stop()
	}()
	return p, nil
}

// start runs the profiler on ticks (tests drive it with their own channel).
func start(cfg Config, ticks <-chan time.Time) (*Profiler, error) {
	if cfg.Dir == "" || cfg.Prefix == "" || cfg.MaxFiles < 1 {
		return nil, fmt.Errorf("%w: dir %q, prefix %q, max files %d", ErrBadConfig, cfg.Dir, cfg.Prefix, cfg.MaxFiles)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	f, err := os.Create(cfg.path(0))
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Profiler{cfg: cfg, stop: cancel, done: make(chan struct{})}
	go p.run(ctx, f, ticks)
	return p, nil
}

func (c Config) path(n int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("%s.%d.pprof", c.Prefix, n))
}

func (p *Profiler) run(ctx context.Context, f *os.File, ticks <-chan time.Time) {
	defer close(p.done)
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			pprof.StopCPUProfile()
			p.fail(f.Close())
			return
		case <-ticks:
		}
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			p.fail(err)
			return
		}
		if old := n - p.cfg.MaxFiles; old >= 0 {
			if err := os.Remove(p.cfg.path(old)); err != nil && !errors.Is(err, os.ErrNotExist) {
				p.fail(err)
				return
			}
		}
		var err error
		if f, err = os.Create(p.cfg.path(n + 1)); err != nil {
			p.fail(err)
			return
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			p.fail(err)
			return
		}
	}
}

func (p *Profiler) fail(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = fmt.Errorf("cpuprofile: %w", err)
	}
}

// Stop ends the profile being written (keeping it) and returns the first
// error met, if any.
func (p *Profiler) Stop() error {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
