package benchmark

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childAttr puts a node in its own process group (a terminal's Ctrl-C
// reaches the bench, which stops the nodes in order) and kills it if the
// bench dies without cleaning up.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux the kernel's ABI documents).
const clockTicks = 100

// processTreeCPU sums the user and system CPU time of roots and all their
// living descendants, read from /proc; every root must run. Processes
// that exited are not counted (nor reaped ones' times: a node's plugin
// runs as long as it).
func processTreeCPU(roots []int) (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	type proc struct {
		ppid  int
		ticks uint64
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, ticks, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		procs[pid] = proc{ppid, ticks}
	}
	// Every root must run: a reading without one (a killed node) would
	// make the difference between two readings meaningless.
	in := map[int]bool{}
	for _, pid := range roots {
		if _, ok := procs[pid]; !ok {
			return 0, fmt.Errorf("process %d does not run", pid)
		}
		in[pid] = true
	}
	// Descendants: repeat until no process joins (trees here are shallow).
	for grown := true; grown; {
		grown = false
		for pid, p := range procs {
			if !in[pid] && in[p.ppid] {
				in[pid], grown = true, true
			}
		}
	}
	var ticks uint64
	for pid := range in {
		ticks += procs[pid].ticks
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// readStat returns a process's parent and its utime+stime in clock ticks.
func readStat(pid int) (int, uint64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	ppid, ticks, err := parseStat(raw)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return ppid, ticks, nil
}

// parseStat reads the parent and utime+stime of a /proc/<pid>/stat line.
// The command name (field 2) may hold spaces and parentheses, so fields are
// counted from its last closing parenthesis.
func parseStat(raw []byte) (int, uint64, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, 0, errors.New("no command name")
	}
	// After ") ": state(3) ppid(4) ... utime(14) stime(15).
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("%d fields", len(f)+2)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, err
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, 0, err
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, 0, err
	}
	return ppid, utime + stime, nil
}
