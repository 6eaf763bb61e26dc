// Package cluster runs a local SeaweedFS cluster for S-Chain: three masters
// (hashicorp raft) and a volume server on 127.0.0.1, or each on a host of
// its own (Config.MasterHosts, VolumeHost), from build/weed (the patched
// binary), in one of the sequencer modes. `schain seaweedfs up|down`,
// the end-to-end tests and the benchmark use it.
//
// Each master has its own directory: conf/master.toml (the [master.sequencer]
// table of its mode; weed reads it through -config_dir), data/ (its -mdir,
// with the raft state and, in schain-shadow mode, the pairs file) and
// master.log. The cluster's layout, ports and PIDs are written to
// cluster.json, so that another process (`schain seaweedfs down`) can find
// and stop it. Masters can be restarted in another mode on the same ports
// and data: that is how a cutover or a rollback switches a cluster.
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/ports"
)

// Mode is a master sequencer type.
type Mode string

// Modes.
const (
	// ModeRaft is stock SeaweedFS: the in-memory sequencer and raft volume
	// ids.
	ModeRaft Mode = "raft"
	// ModeShadow serves as stock and mirrors every allocation to S-Chain.
	ModeShadow Mode = schainseq.TypeShadow
	// ModeSChain takes file keys and volume ids from S-Chain.
	ModeSChain Mode = schainseq.TypeSChain
	// ModeLeaderless is ModeSChain on every master at once: each master
	// takes every heartbeat (the volume server keeps a stream to each),
	// assigns, looks up and grows volumes without leading raft.
	ModeLeaderless Mode = schainseq.TypeLeaderless
	// ModeRaftless is ModeLeaderless without raft: masters have no peers,
	// each serves every client itself, and the admin lock and vacuums take
	// S-Chain leases.
	ModeRaftless Mode = schainseq.TypeRaftless
)

// Leaderless reports whether every master of the mode allocates (and the
// volume server keeps a heartbeat stream to each).
func (m Mode) Leaderless() bool { return m == ModeLeaderless || m == ModeRaftless }

// StateFile is the cluster's description in its directory.
const StateFile = "cluster.json"

var (
	// ErrNoCluster: the directory holds no cluster.
	ErrNoCluster = errors.New("no SeaweedFS cluster here (start one with `schain-dev seaweedfs up`)")
	// ErrNoLeader: the masters agree on no leader.
	ErrNoLeader = errors.New("the masters agree on no leader")
	// ErrCPULimit: Config.MasterMilliCPUs could not be applied.
	ErrCPULimit = errors.New("cannot limit the masters' CPU")

	errBadMode = errors.New("unknown sequencer mode")
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeRaft, ModeShadow, ModeSChain, ModeLeaderless, ModeRaftless:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want raft, schain-shadow, schain, schain-leaderless or schain-raftless", errBadMode, s)
}

// SChain is how the masters reach S-Chain (modes schain and
// schain-shadow).
type SChain = cutover.SChain

// Host is where a process runs: the address it binds and announces, and
// the prefix that runs a program there (ip netns exec <host>).
type Host struct {
	Addr string   `json:"addr"`
	Wrap []string `json:"wrap,omitempty"`
}

// loopback is where a process runs unless placed.
var loopback = Host{Addr: "127.0.0.1"}

// Config describes a cluster to start.
type Config struct {
	// Weed is the weed binary (build/weed).
	Weed string
	// Dir holds the cluster; it must be empty or absent.
	Dir string
	// Masters is the number of masters (3).
	Masters int
	// Mode is the masters' sequencer type.
	Mode Mode
	// SChain is required by the S-Chain modes.
	SChain SChain
	// Sequencer holds more [master.sequencer] keys (for example
	// schain_horizon, or the rollback floors file_key_floor and
	// volume_id_floor).
	Sequencer map[string]string
	// VolumeMax is the volume server's number of volume slots (32).
	VolumeMax int
	// VolumeSizeLimitMB is the masters' volume size limit (64).
	VolumeSizeLimitMB int
	// MasterMilliCPUs, if not zero, limits each master to this many
	// thousandths of a CPU (a cgroup each; root on Linux), and sets its
	// GOMAXPROCS to match: masters on one machine then behave like masters
	// on machines of their own of that size, which is what a comparison of
	// one leader with several leaderless masters needs on a small machine.
	MasterMilliCPUs int
	// MasterHosts places the masters, one each (nil: all on 127.0.0.1);
	// VolumeHost places the volume server (nil: 127.0.0.1).
	MasterHosts []Host
	VolumeHost  *Host
	// Filer starts a filer (its store in the cluster directory) on the
	// masters, and S3 an S3 gateway on the filer (S3 implies Filer).
	Filer, S3 bool
	// Detach makes the processes outlive this one (`schain-dev seaweedfs up`);
	// otherwise they die with it (tests, benchmarks).
	Detach bool
	// Progress receives human-readable progress lines.
	Progress io.Writer
}

// DefaultConfig starts 3 masters in mode under dir with weed.
func DefaultConfig(weed, dir string, mode Mode) Config {
	return Config{Weed: weed, Dir: dir, Masters: 3, Mode: mode, VolumeMax: 32, VolumeSizeLimitMB: 64}
}

// Cluster is a started (or opened) cluster. Its methods are safe for
// concurrent use.
type Cluster struct {
	mu     sync.Mutex // guards the fields below and the processes' start/stop
	state  state
	client *seaweed.Client
	out    io.Writer
}

// state is cluster.json.
type state struct {
	Weed              string            `json:"weed"`
	Dir               string            `json:"dir"`
	Mode              Mode              `json:"mode"`
	SChain            SChain            `json:"schain"`
	Sequencer         map[string]string `json:"sequencer,omitempty"`
	VolumeSizeLimitMB int               `json:"volume_size_limit_mb"`
	MasterMilliCPUs   int               `json:"master_milli_cpus,omitempty"`
	Detach            bool              `json:"detach"`
	Masters           []*master         `json:"masters"`
	Volume            *volume           `json:"volume"`
	// Services are the processes beside the masters and the first volume
	// server (services.go).
	Services []*service `json:"services,omitempty"`
}

type master struct {
	HTTP int  `json:"http"`
	GRPC int  `json:"grpc"`
	Host Host `json:"host"`
	// CPUGroup is the cgroup limiting the master's CPU, if any.
	CPUGroup string `json:"cpu_group,omitempty"`
	proc
}

type volume struct {
	HTTP int    `json:"http"`
	GRPC int    `json:"grpc"`
	Host Host   `json:"host"`
	Max  int    `json:"max"`
	Data string `json:"data"`
	proc
}

func (c Config) verify() error {
	if _, err := os.Stat(c.Weed); err != nil {
		return fmt.Errorf("weed binary %s: %w (run `make weed`)", c.Weed, err)
	}
	if _, err := ParseMode(string(c.Mode)); err != nil {
		return err
	}
	if c.Mode != ModeRaft && (len(c.SChain.URIs) == 0 || c.SChain.Chain == "" || c.SChain.TokenFile == "") {
		return fmt.Errorf("mode %s needs S-Chain node URIs, a chain ID and a token file", c.Mode)
	}
	if c.Masters < 1 || c.VolumeMax < 1 || c.VolumeSizeLimitMB < 1 {
		return errors.New("masters, volume slots and the volume size limit must be positive")
	}
	if c.MasterHosts != nil && len(c.MasterHosts) != c.Masters {
		return fmt.Errorf("%d master hosts for %d masters", len(c.MasterHosts), c.Masters)
	}
	if c.MasterMilliCPUs < 0 {
		return fmt.Errorf("%w: %d thousandths of a CPU", ErrCPULimit, c.MasterMilliCPUs)
	}
	return nil
}

// Start starts the masters, waits for a leader, starts the volume server and
// waits until the leader knows it. On failure it stops what it started.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.verify(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("cluster directory %s is not empty (stop its cluster with `schain seaweedfs down`, or choose another)", dir)
	}
	weed, err := filepath.Abs(cfg.Weed)
	if err != nil {
		return nil, err
	}
	cfg.Filer = cfg.Filer || cfg.S3
	free, err := ports.Free(2*cfg.Masters + 2)
	if err != nil {
		return nil, err
	}
	seqKeys := cfg.Sequencer
	if cfg.Mode.Leaderless() && seqKeys["schain_masters"] == "" {
		seqKeys = maps.Clone(seqKeys)
		if seqKeys == nil {
			seqKeys = map[string]string{}
		}
		seqKeys["schain_masters"] = strconv.Itoa(cfg.Masters)
	}
	st := state{Weed: weed, Dir: dir, Mode: cfg.Mode, SChain: cfg.SChain, Sequencer: seqKeys,
		VolumeSizeLimitMB: cfg.VolumeSizeLimitMB, MasterMilliCPUs: cfg.MasterMilliCPUs, Detach: cfg.Detach}
	for i := range cfg.Masters {
		h := loopback
		if cfg.MasterHosts != nil {
			h = cfg.MasterHosts[i]
		}
		st.Masters = append(st.Masters, &master{HTTP: free[2*i], GRPC: free[2*i+1], Host: h})
	}
	st.Volume = &volume{HTTP: free[2*cfg.Masters], GRPC: free[2*cfg.Masters+1], Max: cfg.VolumeMax, Host: loopback}
	if cfg.VolumeHost != nil {
		st.Volume.Host = *cfg.VolumeHost
	}
	c := &Cluster{state: st, out: cfg.Progress}
	if c.out == nil {
		c.out = io.Discard
	}
	if err := c.layout(); err != nil {
		return nil, err
	}
	if c.client, err = newClient(c.MasterAddrs()); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = c.Stop(sctx)
		}
	}()
	raft := "hashicorp raft"
	if cfg.Mode == ModeRaftless {
		raft = "no raft"
	}
	c.progress("starting %d SeaweedFS masters (%s mode, %s) at %s...", cfg.Masters, cfg.Mode, raft, strings.Join(c.MasterAddrs(), ", "))
	if err := c.startMasters(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if cfg.Mode == ModeRaftless {
		if err := c.WaitMasters(ctx); err != nil {
			return nil, c.withLogs(err)
		}
		c.progress("every master answers, after %v", time.Since(t0).Round(100*time.Millisecond))
	} else {
		leader, err := c.WaitLeader(ctx, "")
		if err != nil {
			return nil, c.withLogs(err)
		}
		c.progress("leader %s elected after %v", leader, time.Since(t0).Round(100*time.Millisecond))
	}
	c.progress("starting the volume server at %s (%d volume slots)...", c.VolumeAddr(), st.Volume.Max)
	if err := c.startVolume(); err != nil {
		return nil, err
	}
	if err := c.waitVolumeServer(ctx); err != nil {
		return nil, c.withLogs(err)
	}
	c.progress("volume server registered; cluster directory %s", dir)
	if err := c.startGateways(ctx, cfg.Filer, cfg.S3); err != nil {
		return nil, c.withLogs(err)
	}
	ok = true
	return c, nil
}

// layout creates the directories and config files and writes the state.
func (c *Cluster) layout() error {
	st := &c.state
	peers := c.peers()
	masterPeers := peers
	if st.Mode == ModeRaftless {
		masterPeers = "none" // no raft peers at all
	}
	for i, m := range st.Masters {
		mdir := filepath.Join(st.Dir, fmt.Sprintf("master%d", i+1))
		for _, d := range []string{filepath.Join(mdir, "conf"), filepath.Join(mdir, "data")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		m.Name, m.Dir, m.Log, m.Wrap = fmt.Sprintf("master%d", i+1), mdir, filepath.Join(mdir, "master.log"), m.Host.Wrap
		m.Args = []string{
			"-config_dir=" + filepath.Join(mdir, "conf"), "master",
			"-ip=" + m.Host.Addr, "-ip.bind=" + m.Host.Addr, "-port=" + strconv.Itoa(m.HTTP), "-port.grpc=" + strconv.Itoa(m.GRPC),
			"-mdir=" + filepath.Join(mdir, "data"), "-peers=" + masterPeers, "-raftHashicorp",
			"-volumeSizeLimitMB=" + strconv.Itoa(st.VolumeSizeLimitMB), "-defaultReplication=000", "-telemetry=false",
		}
		switch {
		case st.MasterMilliCPUs > 0 && os.Getenv("GOMAXPROCS") == "":
			m.Env = []string{"GOMAXPROCS=" + strconv.Itoa(max(1, (st.MasterMilliCPUs+999)/1000))}
		case st.Mode.Leaderless():
			m.Env = leaderlessMasterEnv(runtime.NumCPU(), len(st.Masters), os.Getenv("GOMAXPROCS"))
		}
	}
	v := st.Volume
	vdir := filepath.Join(st.Dir, "volume")
	v.Data = filepath.Join(vdir, "data")
	if err := os.MkdirAll(v.Data, 0o755); err != nil {
		return err
	}
	v.Name, v.Dir, v.Log, v.Wrap = "volume", vdir, filepath.Join(vdir, "volume.log"), v.Host.Wrap
	v.Args = []string{
		"volume", "-ip=" + v.Host.Addr, "-ip.bind=" + v.Host.Addr, "-port=" + strconv.Itoa(v.HTTP), "-port.grpc=" + strconv.Itoa(v.GRPC),
		"-dir=" + v.Data, "-max=" + strconv.Itoa(v.Max), "-master=" + peers, "-preStopSeconds=0",
	}
	if st.Mode.Leaderless() {
		v.Env = []string{schainseq.LeaderlessEnv + "=1"} // a stream to every master
	}
	if err := c.writeMasterConfig(); err != nil {
		return err
	}
	return c.save()
}

// leaderlessMasterEnv is the environment added to a leaderless master of a
// cluster whose masters share this machine's cpus: GOMAXPROCS its share of
// them (at least 1), unless the operator set GOMAXPROCS. Leaderless masters
// are all busy at once; with Go's default (every cpu each) they oversubscribe
// the machine, and on 2 cpus three of them measured half the assigns/s of
// one (3,668 vs 7,068) where with a share each they came close (6,668). A
// stock cluster is left alone: its followers are idle, so its leader has
// the machine to itself.
func leaderlessMasterEnv(cpus, masters int, set string) []string {
	if set != "" || masters < 1 {
		return nil
	}
	return []string{"GOMAXPROCS=" + strconv.Itoa(max(1, cpus/masters))}
}

// MasterToml renders the [master.sequencer] table of a mode
// (cutover.MasterToml).
func MasterToml(mode Mode, sc SChain, extra map[string]string) string {
	return cutover.MasterToml(string(mode), sc, extra)
}

func (c *Cluster) writeMasterConfig() error {
	toml := MasterToml(c.state.Mode, c.state.SChain, c.state.Sequencer)
	for _, m := range c.state.Masters {
		if err := os.WriteFile(filepath.Join(m.Dir, "conf", "master.toml"), []byte(toml), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) save() error {
	b, err := json.MarshalIndent(&c.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.state.Dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(c.state.Dir, StateFile))
}

// Open reads the cluster of dir, started by this or another process.
func Open(dir string) (*Cluster, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoCluster, dir)
	}
	if err != nil {
		return nil, err
	}
	c := &Cluster{out: io.Discard}
	if err := json.Unmarshal(b, &c.state); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, StateFile), err)
	}
	if c.client, err = newClient(c.MasterAddrs()); err != nil {
		return nil, err
	}
	return c, nil
}

// SetProgress sets where progress lines go.
func (c *Cluster) SetProgress(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w == nil {
		w = io.Discard
	}
	c.out = w
}

func (c *Cluster) progress(format string, args ...any) {
	fmt.Fprintf(c.out, format+"\n", args...)
}

func newClient(masters []string) (*seaweed.Client, error) {
	cfg := seaweed.DefaultConfig(masters...)
	cfg.RequestTimeout, cfg.DialTimeout, cfg.LeaderRefresh = 3*time.Second, 500*time.Millisecond, 500*time.Millisecond
	return seaweed.New(cfg)
}

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.state.Dir }

// Mode is the masters' current sequencer mode.
func (c *Cluster) Mode() Mode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Mode
}

// SChainConfig is how the masters reach S-Chain.
func (c *Cluster) SChainConfig() SChain {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.SChain
}

// SetSChain sets how the masters reach S-Chain, for their next start (a
// cluster started in raft mode before its first shadow or cutover).
func (c *Cluster) SetSChain(sc SChain) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.SChain = sc
	return c.save()
}

// Weed is the weed binary the cluster runs.
func (c *Cluster) Weed() string { return c.state.Weed }

// MasterAddrs are the masters' HTTP addresses (host:port).
func (c *Cluster) MasterAddrs() []string {
	out := make([]string, len(c.state.Masters))
	for i, m := range c.state.Masters {
		out[i] = fmt.Sprintf("%s:%d", m.Host.addr(), m.HTTP)
	}
	return out
}

// addr is the host's address (127.0.0.1 for a process placed before
// hosts existed: its cluster.json has none).
func (h Host) addr() string {
	if h.Addr == "" {
		return loopback.Addr
	}
	return h.Addr
}

// PairsDirs are where the masters write the shadow's pairs: the default
// [master.sequencer] schain_pairs_dir, <mdir>/schain-shadow.
func (c *Cluster) PairsDirs() []string {
	out := make([]string, len(c.state.Masters))
	for i, m := range c.state.Masters {
		out[i] = filepath.Join(m.Dir, "data", "schain-shadow")
	}
	return out
}

// VolumeAddr is the volume server's HTTP address.
func (c *Cluster) VolumeAddr() string {
	return fmt.Sprintf("%s:%d", c.state.Volume.Host.addr(), c.state.Volume.HTTP)
}

// Client is a SeaweedFS client of the masters (assign, status).
func (c *Cluster) Client() *seaweed.Client { return c.client }

// peers is the -peers and -master value: ip:http.grpc of every master.
func (c *Cluster) peers() string {
	out := make([]string, len(c.state.Masters))
	for i, m := range c.state.Masters {
		out[i] = fmt.Sprintf("%s:%d.%d", m.Host.addr(), m.HTTP, m.GRPC)
	}
	return strings.Join(out, ",")
}

func (c *Cluster) startMasters() error {
	for _, m := range c.state.Masters {
		if m.alive() {
			continue
		}
		if err := c.startMaster(m); err != nil {
			return err
		}
	}
	return c.save()
}

// startMaster starts m and puts it under the cluster's CPU limit, if any.
// Called with c.mu held (or before the cluster is shared).
func (c *Cluster) startMaster(m *master) error {
	if err := m.start(c.state.Weed, c.state.Detach); err != nil {
		return err
	}
	if c.state.MasterMilliCPUs == 0 {
		return nil
	}
	sum := sha256.Sum256([]byte(c.state.Dir))
	group, err := limitCPU(fmt.Sprintf("%x-%s", sum[:6], m.Name), m.PID, c.state.MasterMilliCPUs)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = m.stop(ctx)
		return err
	}
	m.CPUGroup = group
	return nil
}

func (c *Cluster) startVolume() error {
	if err := c.state.Volume.start(c.state.Weed, c.state.Detach); err != nil {
		return err
	}
	return c.save()
}

// Leader returns the leader all live masters agree on.
func (c *Cluster) Leader(ctx context.Context) (string, error) {
	var leader string
	var live int
	for i, addr := range c.MasterAddrs() {
		if !c.state.Masters[i].alive() {
			continue
		}
		live++
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := c.client.Status(sctx, addr)
		cancel()
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrNoLeader, addr, err)
		}
		if st.Leader == "" || (leader != "" && st.Leader != leader) {
			return "", fmt.Errorf("%w: %s names %q, another names %q", ErrNoLeader, addr, st.Leader, leader)
		}
		leader = st.Leader
	}
	if live == 0 {
		return "", fmt.Errorf("%w: no master runs", ErrNoLeader)
	}
	return leader, nil
}

// WaitLeader waits for a leader every live master agrees on, other than
// not (an old leader), until ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context, not string) (string, error) {
	var last error
	for {
		leader, err := c.Leader(ctx)
		if err == nil && leader != not {
			return leader, nil
		}
		if err == nil {
			err = fmt.Errorf("%w: still %s", ErrNoLeader, not)
		}
		last = err
		if serr := sleepCtx(ctx, 200*time.Millisecond); serr != nil {
			return "", fmt.Errorf("waiting for a leader: %w (last: %w)", serr, last)
		}
	}
}

// waitVolumeServer waits until the leader's topology lists the volume
// server (its /dir/status answer names the volume server's address); in
// leaderless mode, until every live master's own topology does.
func (c *Cluster) waitVolumeServer(ctx context.Context) error {
	want := c.VolumeAddr()
	var last string
	for {
		masters, err := c.topologyHolders(ctx)
		if err == nil {
			listed := 0
			for _, m := range masters {
				var body []byte
				body, err = seaweed.Get(ctx, "http://"+m+"/dir/status")
				if err != nil || !strings.Contains(string(body), want) {
					last = m + ": " + string(body)
					break
				}
				listed++
			}
			if listed == len(masters) {
				return nil
			}
		}
		if err != nil {
			last = err.Error()
		}
		if serr := sleepCtx(ctx, 200*time.Millisecond); serr != nil {
			return fmt.Errorf("waiting for the volume server %s to register: %w (last: %.200s)", want, serr, last)
		}
	}
}

// topologyHolders are the masters whose topology clients use: the leader,
// or in leaderless mode every live master.
func (c *Cluster) topologyHolders(ctx context.Context) ([]string, error) {
	if !c.Mode().Leaderless() {
		leader, err := c.Leader(ctx)
		return []string{leader}, err
	}
	var out []string
	for i, addr := range c.MasterAddrs() {
		if c.state.Masters[i].alive() {
			out = append(out, addr)
		}
	}
	return out, nil
}

// WaitTopology waits until every master clients use lists the volume
// server (a restarted master, in leaderless mode, hears from it within
// about a second).
func (c *Cluster) WaitTopology(ctx context.Context) error { return c.waitVolumeServer(ctx) }

// MasterOf returns the index of the master with HTTP address addr.
func (c *Cluster) MasterOf(addr string) (int, error) {
	i := slices.Index(c.MasterAddrs(), addr)
	if i < 0 {
		return 0, fmt.Errorf("%s is not a master of this cluster", addr)
	}
	return i, nil
}

// KillMaster sends SIGKILL to master i and waits until it is gone.
func (c *Cluster) KillMaster(ctx context.Context, i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Masters[i].kill(ctx)
}

// StartMaster (re)starts master i with the cluster's current mode.
func (c *Cluster) StartMaster(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.startMaster(c.state.Masters[i]); err != nil {
		return err
	}
	return c.save()
}

// StopMasters stops every master (SIGTERM, then SIGKILL after a grace).
func (c *Cluster) StopMasters(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, m := range c.state.Masters {
		errs = append(errs, m.stop(ctx))
	}
	return errors.Join(errs...)
}

// RestartMasters is SwitchMode by the sequencer's name: what a cutover
// drives (cutover.Cluster).
func (c *Cluster) RestartMasters(ctx context.Context, sequencer string, extra map[string]string) (string, error) {
	return c.SwitchMode(ctx, Mode(sequencer), extra)
}

// SwitchMode writes the masters' config for mode (with the given extra
// [master.sequencer] keys) and starts the stopped masters in it; the
// running ones are left alone (stop them first: StopMasters). It waits for a
// leader.
func (c *Cluster) SwitchMode(ctx context.Context, mode Mode, extra map[string]string) (string, error) {
	c.mu.Lock()
	c.state.Mode, c.state.Sequencer = mode, extra
	err := c.writeMasterConfig()
	if err == nil {
		c.progress("starting the masters in %s mode...", mode)
		err = c.startMasters()
	}
	c.mu.Unlock()
	if err != nil {
		return "", err
	}
	leader, err := c.WaitLeader(ctx, "")
	if err != nil {
		return "", c.withLogs(err)
	}
	return leader, nil
}

// Stop stops every process of the cluster; the directory stays.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, s := range slices.Backward(c.state.Services) { // gateways before their filers
		errs = append(errs, s.stop(ctx))
	}
	if c.state.Volume != nil {
		errs = append(errs, c.state.Volume.stop(ctx))
	}
	for _, m := range c.state.Masters {
		errs = append(errs, m.stop(ctx))
		releaseCPU(m.CPUGroup)
	}
	if c.client != nil {
		c.client.Close()
	}
	return errors.Join(errs...)
}

// Alive lists the processes that run, by name.
func (c *Cluster) Alive() map[string]bool {
	out := map[string]bool{}
	for _, m := range c.state.Masters {
		out[m.Name] = m.alive()
	}
	out[c.state.Volume.Name] = c.state.Volume.alive()
	for _, s := range c.state.Services {
		out[s.Name] = s.alive()
	}
	return out
}

// withLogs appends the tail of each process's log to err.
func (c *Cluster) withLogs(err error) error {
	var b strings.Builder
	for _, p := range c.procs() {
		fmt.Fprintf(&b, "\n---- %s (%s), last lines:\n%s", p.Name, p.Log, p.tail(15))
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// Logs returns the tail of every process's log (for a failed test).
func (c *Cluster) Logs(lines int) string {
	var b strings.Builder
	for _, p := range c.procs() {
		fmt.Fprintf(&b, "---- %s (%s), last %d lines:\n%s\n", p.Name, p.Log, lines, p.tail(lines))
	}
	return b.String()
}

func (c *Cluster) procs() []*proc {
	var out []*proc
	for _, m := range c.state.Masters {
		out = append(out, &m.proc)
	}
	if c.state.Volume != nil {
		out = append(out, &c.state.Volume.proc)
	}
	for _, s := range c.state.Services {
		out = append(out, &s.proc)
	}
	return out
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
