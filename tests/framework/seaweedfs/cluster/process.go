package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	childproc "github.com/s-chain/schain/tests/framework/internal/proc"
)

// stopGrace is how long a process gets to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// proc is one weed process. A process started by this one is reaped by a
// goroutine (done closes then); one found in a state file (started by
// another `schain` process) is watched through /proc.
type proc struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	// Wrap runs the program through a prefix (its host's ip netns exec).
	Wrap []string `json:"wrap,omitempty"`
	// Env is added to the environment the process inherits.
	Env []string `json:"env,omitempty"`
	Log string   `json:"log"`
	Dir string   `json:"dir"`
	PID int      `json:"pid"`

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // nil for a process found in a state file
}

// start runs bin with the process's args in its directory, output to its
// log. detach makes it outlive this process (a session of its own);
// otherwise the kernel kills it if this process dies.
func (p *proc) start(bin string, detach bool) error {
	logFile, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	argv := append(append(append([]string{}, p.Wrap...), bin), p.Args...)
	fmt.Fprintf(logFile, "---- %s: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Dir
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr(detach)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.PID = cmd, done, cmd.Process.Pid
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

// alive reports whether the process is still running. A process found in
// a state file counts only if its PID still runs this process's command
// line: a PID reused by another program is never ours.
func (p *proc) alive() bool {
	p.mu.Lock()
	done, pid := p.done, p.PID
	p.mu.Unlock()
	if done != nil {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	return pidAlive(pid) && p.runs(pid)
}

// runs reports whether pid's command line holds every argument of p.
func (p *proc) runs(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	for _, a := range p.Args {
		if !slices.Contains(args, a) {
			return false
		}
	}
	return true
}

// signal sends sig, and waits (at most until ctx ends) for the exit.
func (p *proc) signal(ctx context.Context, sig syscall.Signal) error {
	p.mu.Lock()
	pid := p.PID
	p.mu.Unlock()
	if pid <= 0 || !p.alive() {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s (pid %d): %w", p.Name, pid, err)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for p.alive() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (pid %d) to exit: %w", p.Name, pid, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// kill is kill -9 and the reap.
func (p *proc) kill(ctx context.Context) error { return p.signal(ctx, syscall.SIGKILL) }

// stop asks the process to exit, then kills it after stopGrace.
func (p *proc) stop(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, stopGrace)
	err := p.signal(gctx, syscall.SIGTERM)
	cancel()
	if err == nil {
		return nil
	}
	return p.kill(ctx)
}

// pidAlive reports whether pid runs (a zombie does not count).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrPermission)
	}
	return !strings.Contains(string(stat), ") Z ")
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string { return childproc.TailFile(p.Log, n) }
