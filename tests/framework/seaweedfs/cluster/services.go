package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/ports"
)

// Service kinds: the processes a cluster runs beside its masters and its
// first volume server.
const (
	KindVolume = "volume"
	KindFiler  = "filer"
	KindS3     = "s3"
	KindEtcd   = "etcd"
)

// service is one such process, by name ("volume2", "filer1", "s3-1",
// "etcd1").
type service struct {
	Kind string `json:"kind"`
	HTTP int    `json:"http"`
	GRPC int    `json:"grpc"`
	// Bin is the binary (weed, or etcd for KindEtcd).
	Bin string `json:"bin"`
	// Metrics is a filer's metrics port (0: none).
	Metrics int `json:"metrics,omitempty"`
	proc
}

// Addr is the service's HTTP (or S3, or etcd client) address.
func (s *service) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.HTTP) }

// weedAddr is the address weed names a server by: ip:port.grpc.
func (s *service) weedAddr() string { return fmt.Sprintf("127.0.0.1:%d.%d", s.HTTP, s.GRPC) }

// ErrNoService: no service of the cluster has that name.
var ErrNoService = errors.New("no such service in the cluster")

// service finds a service by name.
func (c *Cluster) service(name string) (*service, error) {
	for _, s := range c.state.Services {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoService, name)
}

// PIDs are the named processes' (masters, the volume server, services).
func (c *Cluster) PIDs(names ...string) ([]int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, 0, len(names))
	for _, name := range names {
		found := false
		for _, p := range c.procs() {
			if p.Name == name {
				out, found = append(out, p.PID), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %q", ErrNoService, name)
		}
	}
	return out, nil
}

// addService lays a service out under the cluster's directory, starts it
// and records it. args get the ports through f.
func (c *Cluster) addService(kind, name, bin string, args func(dir string, http, grpc int) ([]string, error)) (*service, error) {
	free, err := ports.Free(2)
	if err != nil {
		return nil, err
	}
	return c.addServiceOn(kind, name, bin, free[0], free[1], args)
}

// addServiceOn is addService on given ports.
func (c *Cluster) addServiceOn(kind, name, bin string, http, grpc int, args func(dir string, http, grpc int) ([]string, error)) (*service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.service(name); err == nil {
		return nil, fmt.Errorf("service %q exists already", name)
	}
	free := []int{http, grpc}
	dir := filepath.Join(c.state.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &service{Kind: kind, HTTP: free[0], GRPC: free[1], Bin: bin}
	s.Name, s.Dir, s.Log = name, dir, filepath.Join(dir, kind+".log")
	if c.state.Mode.Leaderless() && kind != KindEtcd {
		s.Env = []string{schainseq.LeaderlessEnv + "=1"} // a stream to every master
	}
	var err error
	if s.Args, err = args(dir, s.HTTP, s.GRPC); err != nil {
		return nil, err
	}
	if err := s.start(bin, c.state.Detach); err != nil {
		return nil, err
	}
	c.state.Services = append(c.state.Services, s)
	return s, c.save()
}

// AddVolumeServer starts one more volume server (max volume slots) and
// waits until the masters list it. It returns its name and address.
func (c *Cluster) AddVolumeServer(ctx context.Context, name string, max int) (string, error) {
	s, err := c.addService(KindVolume, name, c.state.Weed, func(dir string, http, grpc int) ([]string, error) {
		data := filepath.Join(dir, "data")
		return []string{
			"volume", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-port=" + strconv.Itoa(http), "-port.grpc=" + strconv.Itoa(grpc),
			"-dir=" + data, "-max=" + strconv.Itoa(max), "-master=" + c.peers(), "-preStopSeconds=0",
		}, os.MkdirAll(data, 0o755)
	})
	if err != nil {
		return "", err
	}
	return s.Addr(), c.waitListed(ctx, s.Addr())
}

// AddFiler starts a filer whose store is filerToml's (its filer.toml: the
// S-Chain store, etcd...; "" is stock leveldb2 in the filer's directory)
// and waits until it answers. Filers of one group (weed's -filerGroup; ""
// is the default one) follow each other's metadata: filers of different
// stores on one cluster belong to different groups, or a new filer copies
// every entry of the others into its own store. It returns its HTTP
// address.
func (c *Cluster) AddFiler(ctx context.Context, name, group, filerToml string) (string, error) {
	metrics, err := ports.Free(1)
	if err != nil {
		return "", err
	}
	s, err := c.addService(KindFiler, name, c.state.Weed, func(dir string, http, grpc int) ([]string, error) {
		if err := os.MkdirAll(filepath.Join(dir, "store"), 0o755); err != nil {
			return nil, err
		}
		var args []string
		if filerToml != "" {
			conf := filepath.Join(dir, "conf")
			if err := os.MkdirAll(conf, 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(conf, "filer.toml"), []byte(filerToml), 0o644); err != nil {
				return nil, err
			}
			args = append(args, "-config_dir="+conf)
		}
		args = append(args, "filer", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
			"-port="+strconv.Itoa(http), "-port.grpc="+strconv.Itoa(grpc), "-master="+c.peers(),
			"-defaultStoreDir="+filepath.Join(dir, "store"), "-localSocket="+filepath.Join(dir, "filer.sock"),
			"-metricsPort="+strconv.Itoa(metrics[0]),
		)
		if group != "" {
			args = append(args, "-filerGroup="+group)
		}
		return args, nil
	})
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	s.Metrics = metrics[0]
	err = c.save()
	c.mu.Unlock()
	if err != nil {
		return "", err
	}
	return s.Addr(), c.waitAnswers(ctx, s, "http://"+s.Addr()+"/?pretty=y")
}

// Metrics reads the Prometheus metrics of the filer at addr (its HTTP
// address), by family name (SeaweedFS_filerStore_request_total, ...).
func (c *Cluster) Metrics(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	s, err := c.byAddr(addr)
	if err != nil {
		return nil, err
	}
	if s.Metrics == 0 {
		return nil, fmt.Errorf("%w: %s serves no metrics", ErrNoService, s.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", s.Metrics), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", s.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics of %s: HTTP %s", s.Name, resp.Status)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", s.Name, err)
	}
	return families, nil
}

// AddS3 starts an S3 gateway on the filers at filerAddrs (their HTTP
// addresses, the first preferred) and waits until it answers. Requests
// need no signature: the gateway has no identities.
func (c *Cluster) AddS3(ctx context.Context, name string, filerAddrs ...string) (string, error) {
	var filers []string
	for _, a := range filerAddrs {
		f, err := c.byAddr(a)
		if err != nil {
			return "", err
		}
		filers = append(filers, f.weedAddr())
	}
	s, err := c.addService(KindS3, name, c.state.Weed, func(_ string, http, grpc int) ([]string, error) {
		return []string{
			"s3", "-ip.bind=127.0.0.1", "-port=" + strconv.Itoa(http), "-port.grpc=" + strconv.Itoa(grpc),
			"-filer=" + strings.Join(filers, ","), "-port.iceberg=0", "-port.lance=0",
		}, nil
	})
	if err != nil {
		return "", err
	}
	return s.Addr(), c.waitAnswers(ctx, s, "http://"+s.Addr()+"/status")
}

// AddEtcd starts an etcd cluster of members (etcd1, etcd2, ...; the etcd
// binary, scripts/install-etcd.sh) and waits until every member answers.
// It returns the members' client addresses.
func (c *Cluster) AddEtcd(ctx context.Context, members int) ([]string, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd: %w (scripts/install-etcd.sh installs Debian's etcd-server)", err)
	}
	free, err := ports.Free(2 * members)
	if err != nil {
		return nil, err
	}
	var initial []string
	for i := range members {
		initial = append(initial, fmt.Sprintf("etcd%d=http://127.0.0.1:%d", i+1, free[2*i+1]))
	}
	var addrs []string
	var started []*service
	for i := range members {
		name := fmt.Sprintf("etcd%d", i+1)
		s, err := c.addServiceOn(KindEtcd, name, bin, free[2*i], free[2*i+1], func(dir string, client, peer int) ([]string, error) {
			return []string{
				"--name=" + name, "--data-dir=" + filepath.Join(dir, "data"),
				fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", client), fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", client),
				fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", peer), fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", peer),
				"--initial-cluster=" + strings.Join(initial, ","), "--initial-cluster-state=new", "--initial-cluster-token=" + filepath.Base(c.state.Dir),
			}, nil
		})
		if err != nil {
			return nil, err
		}
		started = append(started, s)
		addrs = append(addrs, s.Addr())
	}
	for _, s := range started {
		if err := c.waitAnswers(ctx, s, "http://"+s.Addr()+"/health"); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// byAddr finds a service by its HTTP address.
func (c *Cluster) byAddr(addr string) (*service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.state.Services {
		if s.Addr() == addr {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: address %s", ErrNoService, addr)
}

// Kill sends SIGKILL to the named service and waits until it is gone.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.service(name)
	if err != nil {
		return err
	}
	return s.kill(ctx)
}

// Restart starts a stopped service again with its arguments.
func (c *Cluster) Restart(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.service(name)
	if err != nil {
		return err
	}
	if s.alive() {
		return nil
	}
	if err := s.start(s.Bin, c.state.Detach); err != nil {
		return err
	}
	return c.save()
}

// ServiceAddr is the named service's address.
func (c *Cluster) ServiceAddr(name string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.service(name)
	if err != nil {
		return "", err
	}
	return s.Addr(), nil
}

// waitListed waits until every master clients use lists addr in its
// topology.
func (c *Cluster) waitListed(ctx context.Context, addr string) error {
	return c.waitFor(ctx, "volume server "+addr+" to register", func() error {
		masters, err := c.topologyHolders(ctx)
		if err != nil {
			return err
		}
		for _, m := range masters {
			body, err := seaweed.Get(ctx, "http://"+m+"/dir/status")
			if err != nil {
				return err
			}
			if !strings.Contains(string(body), addr) {
				return fmt.Errorf("%s does not list it yet", m)
			}
		}
		return nil
	})
}

// waitAnswers waits until url answers a GET with any HTTP status, or the
// service exits.
func (c *Cluster) waitAnswers(ctx context.Context, s *service, url string) error {
	return c.waitFor(ctx, s.Name+" to answer", func() error {
		if !s.alive() {
			return fmt.Errorf("%w: %s exited:\n%s", errExited, s.Name, s.tail(20))
		}
		conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err != nil {
			return err
		}
		conn.Close()
		_, err = seaweed.Get(ctx, url)
		var status *seaweed.StatusError
		if errors.As(err, &status) {
			return nil // it answers
		}
		return err
	})
}

var errExited = errors.New("service exited")

// waitFor retries check every 200 ms until it passes, ctx ends, or it
// reports that the service exited.
func (c *Cluster) waitFor(ctx context.Context, what string, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		if errors.Is(err, errExited) {
			return err
		}
		if serr := sleepCtx(ctx, 200*time.Millisecond); serr != nil {
			return fmt.Errorf("waiting for %s: %w (last: %.300v)", what, serr, err)
		}
	}
}
