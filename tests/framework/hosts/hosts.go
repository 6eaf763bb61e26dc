// Package hosts makes separate hosts on this machine for tests and
// benchmarks: each a Linux network namespace with its own address in
// 198.18.0.0/15 (the benchmarking range, RFC 2544), joined by a veth link
// to one bridge, as machines on one switch. The machine itself (the root
// namespace) is on the bridge too, as the clients' host. A link can be cut
// (a partition) and shaped (delay, jitter, loss: Shape).
//
// Every namespace, link and rule is named with one prefix and the net's
// number, so that Close removes them all and Sweep removes what a killed
// run left. It needs root, iproute2 and iptables (EnsureTools installs
// Debian's iptables if missing); Available says whether this machine can.
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace, link and rule this package
// makes.
const Prefix = "schn"

// MaxHosts bounds a net: its addresses are one /24 (.1 to .250 for hosts,
// .254 for the machine).
const MaxHosts = 250

var (
	// ErrUnavailable: this machine cannot make hosts (not root, no network
	// namespaces, no iptables); the error says which.
	ErrUnavailable = errors.New("hosts: network namespaces unavailable")
	// ErrConfig: a net asked for out of bounds.
	ErrConfig = errors.New("hosts: invalid net")
)

// Config is a net to make.
type Config struct {
	// Number tells nets apart (0..255): their names carry it and their
	// addresses are 198.18.<Number>.0/24.
	Number int
	// Hosts is how many hosts (1..MaxHosts).
	Hosts int
	// Seed makes the shapes' random jitter and loss repeatable.
	Seed uint64
}

// Net is a made set of hosts. Its methods are safe for concurrent use.
type Net struct {
	num     int
	bridge  string
	machine netip.Addr
	hosts   []*Host

	mu      sync.Mutex // guards the shapers and the machine's rule
	shapers map[string]*shaper
	seed    uint64
}

// Host is one network namespace.
type Host struct {
	net *Net
	// Name is the namespace's name (ip netns), Addr its address.
	Name string
	Addr netip.Addr
	// link is the veth end on the bridge (down: the host is cut off).
	link string
}

// Available reports why hosts cannot be made here (nil: they can).
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (network namespaces, veth links and iptables need root)", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no ip command (iproute2)", ErrUnavailable)
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("%w: the kernel has no network namespaces", ErrUnavailable)
	}
	name := fmt.Sprintf("%sprobe%d", Prefix, os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: ip netns add: %v: %s", ErrUnavailable, err, bytes.TrimSpace(out))
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
	return nil
}

// EnsureTools installs Debian's iptables if it is missing (shaping needs
// its NFQUEUE target).
func EnsureTools() error {
	if _, err := exec.LookPath("iptables"); err == nil {
		return nil
	}
	out, err := exec.Command("sh", "-c", "apt-get install -y -qq --no-install-recommends iptables || (apt-get update -qq && apt-get install -y -qq --no-install-recommends iptables)").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: iptables is missing and installing it failed: %v\n%s", ErrUnavailable, err, out)
	}
	return nil
}

// run runs a command and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// New makes the hosts: a bridge, and per host a namespace with a veth
// link to it, its address and loopback up. On failure it removes what it
// made.
func New(ctx context.Context, cfg Config) (*Net, error) {
	if cfg.Hosts < 1 || cfg.Hosts > MaxHosts || cfg.Number < 0 || cfg.Number > 255 {
		return nil, fmt.Errorf("%w: %d hosts, number %d (hint: 1..%d hosts, number 0..255)", ErrConfig, cfg.Hosts, cfg.Number, MaxHosts)
	}
	n := &Net{
		num: cfg.Number, bridge: fmt.Sprintf("%s%dbr", Prefix, cfg.Number),
		machine: netip.AddrFrom4([4]byte{198, 18, byte(cfg.Number), 254}),
		shapers: map[string]*shaper{}, seed: cfg.Seed,
	}
	ok := false
	defer func() {
		if !ok {
			_ = n.Close()
		}
	}()
	// The bridge keeps its frames off the machine's iptables (br_netfilter
	// would pass them through FORWARD): the hosts are a switch, not a router.
	steps := [][]string{
		{"link", "add", n.bridge, "type", "bridge", "nf_call_iptables", "0"},
		{"addr", "add", n.machine.String() + "/24", "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	}
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Hosts {
		h := &Host{
			net:  n,
			Name: fmt.Sprintf("%s%dh%d", Prefix, cfg.Number, i+1),
			Addr: netip.AddrFrom4([4]byte{198, 18, byte(cfg.Number), byte(i + 1)}),
			link: fmt.Sprintf("%s%dv%d", Prefix, cfg.Number, i+1),
		}
		n.hosts = append(n.hosts, h)
		peer := h.link + "p"
		for _, s := range [][]string{
			{"netns", "add", h.Name},
			{"link", "add", h.link, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", h.Name},
			{"-n", h.Name, "link", "set", peer, "name", "eth0"},
			{"-n", h.Name, "addr", "add", h.Addr.String() + "/24", "dev", "eth0"},
			{"-n", h.Name, "link", "set", "eth0", "up"},
			{"-n", h.Name, "link", "set", "lo", "up"},
			{"link", "set", h.link, "master", n.bridge},
			{"link", "set", h.link, "up"},
		} {
			if err := run(ctx, "ip", s...); err != nil {
				return nil, err
			}
		}
	}
	ok = true
	return n, nil
}

// Hosts are the net's hosts, in order (addresses .1, .2, ...).
func (n *Net) Hosts() []*Host { return n.hosts }

// Machine is this machine's address on the net (the clients' host).
func (n *Net) Machine() netip.Addr { return n.machine }

// Close stops the shapers and removes every namespace, link and rule of
// the net; it goes on past errors and returns them all. Processes still
// running in a namespace keep it alive (unnamed) until they exit: stop
// them first.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for name, sh := range n.shapers {
		sh.close()
		delete(n.shapers, name)
	}
	errs = append(errs, n.machineRule("-D"))
	for _, h := range n.hosts {
		if exists("/var/run/netns/" + h.Name) {
			errs = append(errs, run(context.Background(), "ip", "netns", "del", h.Name))
		}
		errs = append(errs, delLink(h.link))
	}
	errs = append(errs, delLink(n.bridge))
	return errors.Join(errs...)
}

// Sweep removes every namespace and link named with Prefix and every
// machine rule with its comment: what a killed run left behind. Call it
// only while no other net is in use (under the heavy-run lock).
func Sweep() error {
	var errs []error
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), Prefix) {
			errs = append(errs, run(context.Background(), "ip", "netns", "del", e.Name()))
		}
	}
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		if strings.HasPrefix(l.Name(), Prefix) {
			errs = append(errs, delLink(l.Name()))
		}
	}
	if out, err := exec.Command("iptables", "-S", "OUTPUT").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "--comment "+Prefix) && strings.HasPrefix(line, "-A ") {
				args := append([]string{"-D"}, strings.Fields(strings.TrimPrefix(line, "-A "))...)
				errs = append(errs, run(context.Background(), "iptables", args...))
			}
		}
	}
	return errors.Join(errs...)
}

// delLink removes a link if it is still there. A veth link also goes with
// its peer's namespace, a moment after the namespace is deleted: a link
// gone meanwhile is no failure.
func delLink(name string) error {
	if !linkExists(name) {
		return nil
	}
	if err := run(context.Background(), "ip", "link", "del", name); err != nil && linkExists(name) {
		return err
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func linkExists(name string) bool { return exists(filepath.Join("/sys/class/net", name)) }

// Command is a command run on the host (ip netns exec): it binds and
// connects from the host's address. ip execs the program, so the
// command's process is the program itself.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Wrap is the prefix that runs a command on the host, for code that builds
// its own exec.Cmd.
func (h *Host) Wrap() []string { return []string{"ip", "netns", "exec", h.Name} }

// Listen listens on the host (addr as net.Listen takes it): the socket
// belongs to the host's namespace, while this process serves it.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNamespace("/var/run/netns/"+h.Name, func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// DialContext connects from the host.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNamespace("/var/run/netns/"+h.Name, func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// inNamespace runs f on a thread that has entered the network namespace
// at nsPath, and leaves it again before the thread runs anything else:
// sockets f opens belong to that namespace for good.
func inNamespace(nsPath string, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer self.Close()
	target, err := os.Open(nsPath)
	if err != nil {
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering %s: %w", nsPath, err)
	}
	ferr := f()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is in the wrong namespace: locked once more, it ends
		// with this goroutine instead of running others.
		runtime.LockOSThread()
		return errors.Join(ferr, fmt.Errorf("leaving %s: %w", nsPath, err))
	}
	return ferr
}

// SetLink brings the host's link up or down: down, the host reaches no
// other host and no other host reaches it (a partition of one).
func (h *Host) SetLink(ctx context.Context, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return run(ctx, "ip", "link", "set", h.link, state)
}

// Shape shapes every packet the host sends on its link (the zero Shape
// ends shaping). Packets to the host are shaped by their sender's link:
// a round trip between two hosts takes both delays.
func (h *Host) Shape(ctx context.Context, s Shape) error {
	if err := s.verify(); err != nil {
		return err
	}
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.shape(ctx, h.Name, "/var/run/netns/"+h.Name, []string{"ip", "netns", "exec", h.Name}, []string{"-o", "eth0"}, 0, s)
}

// ShapeMachine shapes what this machine sends to the hosts (the clients'
// side), as Shape does for a host.
func (n *Net) ShapeMachine(ctx context.Context, s Shape) error {
	if err := s.verify(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.shape(ctx, "", "/proc/self/ns/net", nil, n.machineMatch(), n.machineQueue(), s)
}

// machineQueue is the machine's queue number: one per net, away from
// queues others may use.
func (n *Net) machineQueue() uint16 { return uint16(29000 + n.num) }

func (n *Net) machineMatch() []string {
	return []string{"-o", n.bridge, "-m", "comment", "--comment", fmt.Sprintf("%s%d", Prefix, n.num)}
}

// machineRule adds (-A) or deletes (-D) the machine's NFQUEUE rule.
func (n *Net) machineRule(op string) error {
	rule := append([]string{op, "OUTPUT"}, n.machineMatch()...)
	rule = append(rule, "-j", "NFQUEUE", "--queue-num", strconv.Itoa(int(n.machineQueue())), "--queue-bypass")
	if op == "-D" {
		if exec.Command("iptables", append([]string{"-C"}, rule[1:]...)...).Run() != nil {
			return nil // not there
		}
	}
	return run(context.Background(), "iptables", rule...)
}

// shape starts, changes or ends the shaper of one namespace. Called with
// n.mu held.
func (n *Net) shape(ctx context.Context, key, nsPath string, wrap, match []string, num uint16, s Shape) error {
	sh, on := n.shapers[key]
	switch {
	case on && s.IsZero():
		delete(n.shapers, key)
		var err error
		if wrap == nil {
			err = n.machineRule("-D")
		} else {
			err = iptables(ctx, wrap, "-D", match, num)
		}
		sh.close()
		return err
	case on:
		sh.set(s)
		return nil
	case s.IsZero():
		return nil
	}
	q, err := openQueue(nsPath, num)
	if err != nil {
		return fmt.Errorf("hosts: opening the packet queue of %s: %w", nsPath, err)
	}
	n.shapers[key] = newShaper(q, s, n.seed^uint64(len(n.shapers)+1)*0x9e3779b97f4a7c15)
	if wrap == nil {
		return n.machineRule("-A")
	}
	return iptables(ctx, wrap, "-A", match, num)
}

// iptables adds or deletes a host's NFQUEUE rule on its link. Packets
// bypass the queue when nobody reads it.
func iptables(ctx context.Context, wrap []string, op string, match []string, num uint16) error {
	args := append(append([]string{}, wrap[1:]...), "iptables", op, "OUTPUT")
	args = append(args, match...)
	args = append(args, "-j", "NFQUEUE", "--queue-num", strconv.Itoa(int(num)), "--queue-bypass")
	return run(ctx, wrap[0], args...)
}
