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
	u, err := processTree(roots)
	return u.CPU, err
}

// processCPU sums the user and system CPU time of pids alone, without
// their descendants; every pid must run.
func processCPU(pids []int) (time.Duration, error) {
	var ticks uint64
	for _, pid := range pids {
		st, err := readStat(pid)
		if err != nil {
			return 0, fmt.Errorf("process %d does not run: %w", pid, err)
		}
		ticks += st.ticks
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// TreeUse is what a process tree uses: CPU time since each process
// started, and resident memory now.
type TreeUse struct {
	CPU time.Duration `json:"cpu_ns"`
	// RSS is the resident set of every process of the tree, RootRSS the
	// root's alone, in bytes.
	RSS       uint64 `json:"rss_bytes"`
	RootRSS   uint64 `json:"root_rss_bytes"`
	Processes int    `json:"processes"`
}

// ProcessTreeUse is what a process and its living descendants (a node and
// its plugins) use.
func ProcessTreeUse(root int) (TreeUse, error) { return processTree([]int{root}) }

func processTree(roots []int) (TreeUse, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return TreeUse{}, err
	}
	procs := map[int]stat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		procs[pid] = st
	}
	// Every root must run: a reading without one (a killed node) would
	// make the difference between two readings meaningless.
	in := map[int]bool{}
	for _, pid := range roots {
		if _, ok := procs[pid]; !ok {
			return TreeUse{}, fmt.Errorf("process %d does not run", pid)
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
	var u TreeUse
	var ticks uint64
	for pid := range in {
		ticks += procs[pid].ticks
		u.RSS += procs[pid].rssPages * uint64(os.Getpagesize())
		u.Processes++
	}
	u.CPU = time.Duration(ticks) * time.Second / clockTicks
	if len(roots) == 1 {
		u.RootRSS = procs[roots[0]].rssPages * uint64(os.Getpagesize())
	}
	return u, nil
}

// stat is what the bench reads of /proc/<pid>/stat.
type stat struct {
	ppid     int
	ticks    uint64 // utime+stime in clock ticks
	rssPages uint64
}

// readStat reads a process's parent, utime+stime and resident pages.
func readStat(pid int) (stat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	st, err := parseStat(raw)
	if err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// parseStat reads the parent, utime+stime and rss of a /proc/<pid>/stat
// line. The command name (field 2) may hold spaces and parentheses, so
// fields are counted from its last closing parenthesis.
func parseStat(raw []byte) (stat, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return stat{}, errors.New("no command name")
	}
	// After ") ": state(3) ppid(4) ... utime(14) stime(15) ... rss(24).
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 22 {
		return stat{}, fmt.Errorf("%d fields", len(f)+2)
	}
	var st stat
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return stat{}, err
	}
	utime, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return stat{}, err
	}
	stime, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return stat{}, err
	}
	if st.rssPages, err = strconv.ParseUint(f[21], 10, 64); err != nil {
		return stat{}, err
	}
	st.ticks = utime + stime
	return st, nil
}

// machineBusy is the CPU time every core spent neither idle nor waiting
// for I/O since boot, from /proc/stat's first line.
func machineBusy() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseMachineBusy(raw)
}

// parseMachineBusy reads the "cpu" line of /proc/stat: user nice system
// idle iowait irq softirq steal ..., in clock ticks. Guest times are part
// of user and nice already.
func parseMachineBusy(raw []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy uint64
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}
