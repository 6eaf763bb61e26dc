package hosts

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// needHosts skips a test where hosts cannot be made, saying why.
func needHosts(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("hosts: %v (run as root on Linux to include this test)", err)
	}
	if err := EnsureTools(); err != nil {
		t.Skipf("hosts: %v", err)
	}
	require.NoError(t, Sweep())
}

// echo serves lines back on the host until the listener closes.
func echo(t *testing.T, h *Host) string {
	t.Helper()
	l, err := h.Listen("tcp", h.Addr.String()+":7000")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

// rtt is the median of round trips of one line over one connection,
// dialled from dial.
func rtt(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	r := bufio.NewReader(c)
	var best []time.Duration
	for range 5 {
		start := time.Now()
		if _, err := fmt.Fprintln(c, "ping"); err != nil {
			return 0, err
		}
		if _, err := r.ReadString('\n'); err != nil {
			return 0, err
		}
		best = append(best, time.Since(start))
	}
	return median(best), nil
}

func median(ds []time.Duration) time.Duration {
	for i := range ds {
		for j := i + 1; j < len(ds); j++ {
			if ds[j] < ds[i] {
				ds[i], ds[j] = ds[j], ds[i]
			}
		}
	}
	return ds[len(ds)/2]
}

// TestHosts: hosts reach each other and the machine over the bridge; a
// shape delays what a host sends (a round trip takes both ends' delays),
// total loss and a downed link cut a host off, and ending them restores
// it; Close leaves no namespace, link or rule behind.
func TestHosts(t *testing.T) {
	needHosts(t)
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := New(ctx, Config{Number: 200, Hosts: 3, Seed: 1})
	require.NoError(err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = n.Close()
		}
	})
	h1, h2, h3 := n.Hosts()[0], n.Hosts()[1], n.Hosts()[2]
	require.Equal("198.18.200.1", h1.Addr.String())
	at2 := echo(t, h2)

	base, err := rtt(ctx, h1.DialContext, at2)
	require.NoError(err)
	require.Less(base, 5*time.Millisecond, "unshaped")
	fromMachine, err := rtt(ctx, (&net.Dialer{}).DialContext, at2)
	require.NoError(err, "the machine reaches the hosts")
	require.Less(fromMachine, 5*time.Millisecond)

	require.NoError(h1.Shape(ctx, Shape{Delay: 20 * time.Millisecond, Jitter: 2 * time.Millisecond}))
	d, err := rtt(ctx, h1.DialContext, at2)
	require.NoError(err)
	require.GreaterOrEqual(d, 18*time.Millisecond, "h1's delay")
	require.Less(d, 60*time.Millisecond)
	require.NoError(h2.Shape(ctx, Shape{Delay: 10 * time.Millisecond}))
	d, err = rtt(ctx, h1.DialContext, at2)
	require.NoError(err)
	require.GreaterOrEqual(d, 28*time.Millisecond, "both ends' delays")
	d, err = rtt(ctx, h3.DialContext, at2)
	require.NoError(err)
	require.GreaterOrEqual(d, 10*time.Millisecond, "h2's delay only")
	require.Less(d, 18*time.Millisecond)
	require.NoError(n.ShapeMachine(ctx, Shape{Delay: 15 * time.Millisecond}))
	d, err = rtt(ctx, (&net.Dialer{}).DialContext, at2)
	require.NoError(err)
	require.GreaterOrEqual(d, 25*time.Millisecond, "the machine's and h2's delays")
	require.NoError(n.ShapeMachine(ctx, Shape{}))

	require.NoError(h1.Shape(ctx, Shape{LossPPM: 1_000_000}))
	_, err = rtt(ctx, h1.DialContext, at2)
	require.Error(err, "everything h1 sends is lost")
	require.NoError(h1.Shape(ctx, Shape{}))
	require.NoError(h2.Shape(ctx, Shape{}))
	d, err = rtt(ctx, h1.DialContext, at2)
	require.NoError(err)
	require.Less(d, 5*time.Millisecond, "shapes ended")

	require.NoError(h2.SetLink(ctx, false))
	_, err = rtt(ctx, h1.DialContext, at2)
	require.Error(err, "h2 is cut off")
	require.NoError(h2.SetLink(ctx, true))
	require.Eventually(func() bool {
		_, err := rtt(ctx, h1.DialContext, at2)
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "h2 is back")

	require.NoError(h3.Shape(ctx, Shape{Delay: time.Millisecond}))
	require.NoError(n.ShapeMachine(ctx, Shape{Delay: time.Millisecond}))
	require.NoError(n.Close())
	closed = true
	require.Empty(leftovers(t), "Close removed everything")
}

// TestSweep: a net a killed run left is removed by Sweep.
func TestSweep(t *testing.T) {
	needHosts(t)
	require := require.New(t)
	ctx := context.Background()
	n, err := New(ctx, Config{Number: 201, Hosts: 2})
	require.NoError(err)
	require.NoError(n.ShapeMachine(ctx, Shape{Delay: time.Millisecond}))
	require.NotEmpty(leftovers(t))
	// The run dies: its shapers with it, its namespaces, links and rules stay.
	for _, sh := range n.shapers {
		sh.close()
	}
	require.NoError(Sweep())
	require.Empty(leftovers(t))
}

// TestConfigBounds: a net out of bounds is refused before anything is made.
func TestConfigBounds(t *testing.T) {
	for _, c := range []Config{{Hosts: 0}, {Hosts: MaxHosts + 1}, {Hosts: 1, Number: 256}} {
		_, err := New(context.Background(), c)
		require.ErrorIs(t, err, ErrConfig)
	}
	require.ErrorIs(t, Shape{Delay: time.Millisecond, Jitter: 2 * time.Millisecond}.verify(), ErrShape)
	require.ErrorIs(t, Shape{LossPPM: 1_000_001}.verify(), ErrShape)
	require.NoError(t, Shape{Delay: 2 * time.Millisecond, Jitter: time.Millisecond, LossPPM: 1000}.verify())
}

// leftovers lists what of this package is still on the machine.
func leftovers(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"/var/run/netns", "/sys/class/net"} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			require.NoError(t, err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), Prefix) {
				out = append(out, dir+"/"+e.Name())
			}
		}
	}
	rules, err := exec.Command("iptables", "-S", "OUTPUT").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(string(rules), "\n") {
		if strings.Contains(line, "--comment "+Prefix) {
			out = append(out, line)
		}
	}
	return out
}
