// Package ports picks free TCP ports on 127.0.0.1 for processes this
// project starts (legacy raft nodes, weed masters and volume servers), which
// bind the ports themselves.
//
// A port picked by listening on 127.0.0.1:0 comes from the kernel's
// ephemeral range, the same range every outgoing connection and every
// other ":0" listener draws from: between picking it and the child binding
// it, a test running in parallel can take it, and the child fails with
// "address already in use". Ports below that range are handed out only to
// whoever asks for them by number, so this package picks there, from a
// random start so that parallel pickers rarely meet. It is not a
// reservation: start the processes promptly. A caller in this process
// keeps the listeners instead (Listen).
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package ports

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port picked: below it live well-known services.
const lowest = 10000

// ErrNoneFree is returned when no run of free ports was found.
var ErrNoneFree = errors.New("ports: no free ports on 127.0.0.1 below the ephemeral range")

// Free returns n distinct free ports on 127.0.0.1.
func Free(n int) ([]int, error) {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 1
	}
	return Runs(sizes...)
}

// Runs returns, for each size k, the first of k consecutive free ports on
// 127.0.0.1; no port is in two runs.
func Runs(sizes ...int) ([]int, error) {
	runs, err := Listen(sizes...)
	if err != nil {
		return nil, err
	}
	firsts := make([]int, len(runs))
	for i, run := range runs {
		firsts[i] = run[0].Addr().(*net.TCPAddr).Port
		Close(run)
	}
	return firsts, nil
}

// Listen is Runs for a caller in this process: each run's listeners stay
// bound, to be served or closed by the caller, so no port can be taken
// between choosing and using it.
func Listen(sizes ...int) ([][]net.Listener, error) {
	runs := make([][]net.Listener, 0, len(sizes))
	for _, k := range sizes {
		lns, err := freeRun(k)
		if err != nil {
			for _, run := range runs {
				Close(run)
			}
			return nil, err
		}
		runs = append(runs, lns)
	}
	return runs, nil
}

// Close closes every listener of a run.
func Close(run []net.Listener) {
	for _, l := range run {
		_ = l.Close()
	}
}

// freeRun finds k consecutive free ports and returns them still bound, so
// a caller picking several runs never gets the same port twice.
func freeRun(k int) ([]net.Listener, error) {
	if k < 1 {
		return nil, fmt.Errorf("ports: asked for %d ports", k)
	}
	top := ephemeralStart() - k
	if top <= lowest {
		return nil, ErrNoneFree
	}
	for attempt := 0; attempt < 200; attempt++ {
		first := lowest + rand.IntN(top-lowest)
		held := make([]net.Listener, 0, k)
		for p := first; p < first+k; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				break
			}
			held = append(held, l)
		}
		if len(held) == k {
			return held, nil
		}
		Close(held)
	}
	return nil, ErrNoneFree
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux's
// default where it cannot be read).
func ephemeralStart() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return linuxDefault
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start <= lowest {
		return linuxDefault
	}
	return start
}
