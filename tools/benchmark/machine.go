package benchmark

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// DescribeMachine reads the CPU model and memory from /proc (empty and 0
// where it is not available), so a report says what produced its numbers.
func DescribeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoOS: runtime.GOOS, GoArch: runtime.GOARCH, Go: runtime.Version()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseUint(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		m.MemoryMB = kb / 1024
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file with that key.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
