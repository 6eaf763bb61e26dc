package weedbench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/seaweedfs/objload"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
)

func TestWriteTablesJudgesTheTargets(t *testing.T) {
	rep := &Report{
		Settings: DefaultSettings(),
		Systems: []Steady{
			{Name: "seaweedfs-stock", MedianReqPerSec: 10000, Pooled: benchmark.Summary{P50: time.Millisecond, P99: 4 * time.Millisecond}},
			{Name: "seaweedfs-schain", MedianReqPerSec: 9600, Pooled: benchmark.Summary{P50: time.Millisecond, P99: 5 * time.Millisecond}},
		},
		ThroughputRatio: 0.96, P99Ratio: 1.25,
		MasterKills: []MasterKill{{Name: "seaweedfs-schain", Killed: "127.0.0.1:1", FirstAfter: -1, Check: workload.Check{Uploads: 10, ReadBack: 10}}},
		ValidatorKill: &ValidatorKill{Killed: "NodeID-x", Owned: 1, Volumes: []VolumeResult{
			{Volume: 1, OwnerDead: true, Uploads: 3, FailedAttempts: 2},
			{Volume: 2, Uploads: 9},
		}},
		ObjectKills: []ObjectKill{
			{Name: "seaweedfs-stock", Mode: cluster.ModeRaft, Killed: "127.0.0.1:2", LongestAfter: 15 * time.Second, RaftPeers: 3, Acked: 5, Check: objload.Check{Acked: 5, ReadBack: 5}},
			{Name: "seaweedfs-raftless", Mode: cluster.ModeRaftless, Killed: "127.0.0.1:3", LongestAfter: 250 * time.Millisecond, Acked: 7, Check: objload.Check{Acked: 7, ReadBack: 7}},
		},
	}
	var b strings.Builder
	require.NoError(t, WriteTables(&b, rep))
	out := b.String()
	require.Contains(t, out, "throughput 0.96x (target >= 0.95x: met), p99 1.25x (target <= 1.2x: not met)")
	require.Contains(t, out, "| owner alive (1) | 9 | 0 |")
	require.Contains(t, out, "| owner killed (1) | 3 | 2 |")
	require.Contains(t, out, "Zero failed uploads on volumes whose owner is alive: met")
	require.Contains(t, out, "| none |")
	require.Contains(t, out, "| seaweedfs-stock | yes | 127.0.0.1:2 | 15.0s |")
	require.Contains(t, out, "| seaweedfs-raftless | no (no peers, no raft state) |")
	require.Contains(t, out, "longest PUT 250ms (target <= 300 ms: met), 0 lost (target 0: met), no raft: met")

	rep.ObjectKills[1].LongestAfter, rep.ObjectKills[1].RaftState = 400*time.Millisecond, true
	rep.ObjectKills[1].Check.Lost = 1
	b.Reset()
	require.NoError(t, WriteTables(&b, rep))
	require.Contains(t, b.String(), "longest PUT 400ms (target <= 300 ms: not met), 1 lost (target 0: not met), no raft: not met")
}
