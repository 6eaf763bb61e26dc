// Package proc runs child processes for tests and benchmarks: each with
// its output appended to a log file, started through an optional prefix
// (ip netns exec <host>), dying with this process, and signalled, stopped
// or killed with a wait for the exit.
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
const StopGrace = 30 * time.Second

// Spec is a process to run.
type Spec struct {
	Name string
	// Wrap runs the program through a prefix (nil: directly).
	Wrap []string
	Bin  string
	Args []string
	// Env is added to this process's environment.
	Env []string
	Dir string
	Log string
}

// Process is a started process. Its methods are safe for concurrent use.
type Process struct {
	spec Spec
	mu   sync.Mutex // guards cmd and done across restarts
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs spec; the kernel kills the child if this process dies.
func Start(spec Spec) (*Process, error) {
	p := &Process{spec: spec}
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Start (re)starts the process with its spec, if it is not running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return nil
	}
	logFile, err := os.OpenFile(p.spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	argv := append(append(append([]string{}, p.spec.Wrap...), p.spec.Bin), p.spec.Args...)
	fmt.Fprintf(logFile, "---- %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.spec.Dir
	if len(p.spec.Env) > 0 {
		cmd.Env = append(os.Environ(), p.spec.Env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.spec.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

// Name is the process's name.
func (p *Process) Name() string { return p.spec.Name }

// Log is its log file.
func (p *Process) Log() string { return p.spec.Log }

// PID is its process ID (0 before the first start).
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether it runs (a stopped process runs).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

func (p *Process) runningLocked() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig (SIGSTOP and SIGCONT too) without waiting.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return fmt.Errorf("%s is not running", p.spec.Name)
	}
	return p.cmd.Process.Signal(sig)
}

// SignalGroup sends sig to the process's group (it leads one: Setpgid), so
// that its children, an avalanchego node's plugins, get it too: SIGSTOP
// then freezes the node the way a paused machine or container would.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return fmt.Errorf("%s is not running", p.spec.Name)
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Kill is kill -9 and the wait for the exit.
func (p *Process) Kill(ctx context.Context) error { return p.end(ctx, syscall.SIGKILL) }

// Stop sends SIGTERM (after SIGCONT to its group, in case it is stopped)
// and waits,
// then kills it after StopGrace.
func (p *Process) Stop(ctx context.Context) error {
	_ = p.SignalGroup(syscall.SIGCONT)
	gctx, cancel := context.WithTimeout(ctx, StopGrace)
	err := p.end(gctx, syscall.SIGTERM)
	cancel()
	if err == nil {
		return nil
	}
	return p.Kill(ctx)
}

func (p *Process) end(ctx context.Context, sig syscall.Signal) error {
	p.mu.Lock()
	done, cmd := p.done, p.cmd
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s: %w", p.spec.Name, err)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s (pid %d) to exit: %w", p.spec.Name, cmd.Process.Pid, ctx.Err())
	}
}

// Tail is the last n lines of its log.
func (p *Process) Tail(n int) string { return TailFile(p.spec.Log, n) }

// TailFile is the last n lines of a log file (or why it cannot be read).
func TailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
