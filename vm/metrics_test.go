package vm_test

import (
	"context"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/vmtest"
)

// series is the value of the one series of family name (a counter or a
// gauge) whose labels include every pair of want, and whether there is one.
func series(t testing.TB, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched < len(want) {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// gathered sums every series of a metric family (counter, gauge or
// histogram sample count).
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			case m.Histogram != nil:
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}

func TestMetricsAndHealth(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	keys, err := newKeys(t, 1)
	require.NoError(err)
	one := map[ids.NodeID]*validators.GetValidatorOutput{keys[0].NodeID: {NodeID: keys[0].NodeID, Weight: 1, PublicKey: keys[0].PublicKey()}}
	sets := vmtest.ValidatorSets{10: one}
	reg := prometheus.NewRegistry()
	v := &vm.VM{}
	require.NoError(v.Init(vm.Config{
		NetworkID: 5, ChainID: chainID, SubnetID: subnetID, NodeID: keys[0].NodeID,
		Signer: keys[0].Signer(5, chainID), Validators: sets, Registerer: reg,
		Clock: func() time.Time { return time.UnixMilli(5000) },
	}, memdb.New(), genesis))
	t.Cleanup(func() { require.NoError(v.Shutdown(ctx)) })
	single := &net{t: t, keys: keys, sets: sets, vms: []*vm.VM{v}}
	single.ready(10)
	_, err = v.Writer().Allocate(ctx, []txs.AllocateEntry{{Range: "m", Count: 3}, {Range: "n", Count: 1}})
	require.NoError(err)
	require.Equal(1.0, gathered(t, reg, "mempool_txs"))
	b, err := single.round(0, 10)
	require.NoError(err)

	require.Equal(2.0, gathered(t, reg, "accepted_entries_total"), "two entries under one signature")
	require.Equal(1.0, gathered(t, reg, "accepted_txs_total"))
	require.Equal(10.0, gathered(t, reg, "pchain_height"))
	require.Equal(float64(b.Height()), gathered(t, reg, "accepted_height"))
	require.Positive(gathered(t, reg, "verify_seconds"))
	require.Positive(gathered(t, reg, "accept_seconds"))
	require.Zero(gathered(t, reg, "mempool_txs"))
	health, err := v.HealthCheck(ctx)
	require.NoError(err)
	require.Equal(b.Height(), health.(map[string]any)["lastAcceptedHeight"])
}
