package cluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/cutover"
)

// TestProcessFoundInAStateFileIsOursOnlyIfItRunsOurCommand: `down` must
// never signal a PID that another program took over.
func TestProcessFoundInAStateFileIsOursOnlyIfItRunsOurCommand(t *testing.T) {
	require := require.New(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	p := &proc{Name: "sleeper", Args: []string{"30"}, Log: filepath.Join(dir, "log"), Dir: dir}
	require.NoError(p.start(sleep, false))
	t.Cleanup(func() { _ = p.kill(context.Background()) })
	require.True(p.alive())

	found := &proc{Name: "sleeper", Args: p.Args, PID: p.PID} // as read from cluster.json
	// Between fork and exec the child's command line is still the test's.
	require.Eventually(found.alive, 10*time.Second, 5*time.Millisecond)
	other := &proc{Name: "master1", Args: []string{"master", "-mdir=/elsewhere"}, PID: p.PID}
	require.False(other.alive(), "a PID running another command line is not ours")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(other.stop(ctx), "stopping a process that is not ours signals nothing")
	require.True(p.alive())

	require.NoError(p.kill(ctx))
	require.False(p.alive())
	require.False(found.alive())
}

func TestMasterToml(t *testing.T) {
	got := MasterToml(ModeSChain, SChain{URIs: []string{"http://a:1", "http://b:2"}, Chain: "C", TokenFile: "/t", Prefix: "p"},
		map[string]string{"schain_horizon": "45s"})
	require.Equal(t, `# Written by schain (seaweedfs/cluster): the masters' sequencer.
[master.sequencer]
type = "schain"
schain_rpc = "http://a:1,http://b:2"
schain_chain = "C"
schain_token_file = "/t"
schain_prefix = "p"
schain_horizon = "45s"
`, got)
	require.Equal(t, "# Written by schain (seaweedfs/cluster): the masters' sequencer.\n[master.sequencer]\ntype = \"raft\"\nfile_key_floor = \"9\"\n",
		MasterToml(ModeRaft, SChain{URIs: []string{"x"}}, map[string]string{"file_key_floor": "9"}))
	_, err := ParseMode("bogus")
	require.ErrorIs(t, err, errBadMode)
}

func TestLeaderlessMasterEnvSharesTheCPUs(t *testing.T) {
	require.Equal(t, []string{"GOMAXPROCS=1"}, leaderlessMasterEnv(2, 3, ""), "2 cpus, 3 masters: at least 1")
	require.Equal(t, []string{"GOMAXPROCS=4"}, leaderlessMasterEnv(12, 3, ""))
	require.Nil(t, leaderlessMasterEnv(12, 3, "8"), "the operator's GOMAXPROCS wins")
}

// TestRaftlessLayout: raftless masters get no raft peers; the volume
// server still gets every master, and keeps a stream to each.
func TestRaftlessLayout(t *testing.T) {
	for _, mode := range []Mode{ModeRaftless, ModeLeaderless} {
		dir := t.TempDir()
		c := &Cluster{state: state{Weed: "/bin/true", Dir: dir, Mode: mode, VolumeSizeLimitMB: 64,
			Masters: []*master{{HTTP: 1, GRPC: 2}, {HTTP: 3, GRPC: 4}}, Volume: &volume{HTTP: 5, GRPC: 6, Max: 1}}}
		require.NoError(t, c.layout())
		peers := "-peers=127.0.0.1:1.2,127.0.0.1:3.4"
		if mode == ModeRaftless {
			peers = "-peers=none"
		}
		for _, m := range c.state.Masters {
			require.Contains(t, m.Args, peers, mode)
		}
		require.Contains(t, c.state.Volume.Args, "-master=127.0.0.1:1.2,127.0.0.1:3.4")
		require.Contains(t, c.state.Volume.Env, "SCHAIN_LEADERLESS=1")
		require.True(t, mode.Leaderless())
	}
	require.False(t, ModeSChain.Leaderless())
}

// The local cluster is one a cutover can switch.
var _ cutover.Cluster = (*Cluster)(nil)
