package config_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
)

// TestUpgradesCoverEveryRule: each change of execution has a scheduled
// height and a rule, and a new chain gets all of them from its first block.
// A change added to one and not the other fails here.
func TestUpgradesCoverEveryRule(t *testing.T) {
	require := require.New(t)
	rules := reflect.ValueOf(config.UpgradesAtGenesis().Rules(0))
	rt := rules.Type()
	ut := reflect.TypeOf(config.Upgrades{})
	require.Equal(rt.NumField(), ut.NumField(), "one Upgrades field per Rules field")
	for i := range rt.NumField() {
		require.True(rules.Field(i).Bool(), "UpgradesAtGenesis leaves %s off", rt.Field(i).Name)
		f, ok := ut.FieldByName(rt.Field(i).Name + "Height")
		require.True(ok, "Rules.%s has no Upgrades.%sHeight", rt.Field(i).Name, rt.Field(i).Name)
		require.Equal(reflect.TypeOf((*uint64)(nil)), f.Type)
	}
	require.Equal(execute.Rules{}, config.Upgrades{}.Rules(1<<62), "an unscheduled change never applies")
}

func TestUpgradesApplyFromTheirHeight(t *testing.T) {
	require := require.New(t)
	g, err := config.ParseGenesis([]byte(`{"upgrades": {"livenessGapsHeight": 100}}`))
	require.NoError(err)
	require.False(g.Upgrades.Rules(99).LivenessGaps)
	require.True(g.Upgrades.Rules(100).LivenessGaps)
	require.Equal([]string{"leasesHeight=never", "livenessGapsHeight=100", "manifestsHeight=never", "removalsHeight=never"}, g.Upgrades.Schedule())

	old, err := config.ParseGenesis([]byte(`{}`))
	require.NoError(err)
	require.Equal([]string{"leasesHeight=never", "livenessGapsHeight=never", "manifestsHeight=never", "removalsHeight=never"}, old.Upgrades.Schedule(), "a genesis written before a change never runs it by itself")

	_, err = config.ParseGenesis([]byte(`{"upgrades": {"livenessGapHeight": 1}}`))
	require.ErrorIs(err, config.ErrBadGenesis, "a misspelt upgrade is refused, not ignored")
}

// TestChainConfigSchedulesWhatTheGenesisLeavesOpen: an operator schedules
// a change on an existing chain through every validator's chain config;
// the genesis's own schedule cannot be moved that way.
func TestChainConfigSchedulesWhatTheGenesisLeavesOpen(t *testing.T) {
	require := require.New(t)
	cc, err := config.ParseChainConfig([]byte(`{"upgrades": {"livenessGapsHeight": 500}}`))
	require.NoError(err)

	old, err := config.ParseGenesis([]byte(`{}`))
	require.NoError(err)
	u, err := old.Upgrades.Overlay(cc.Upgrades)
	require.NoError(err)
	require.True(u.Rules(500).LivenessGaps)
	require.False(u.Rules(499).LivenessGaps)
	require.False(old.Upgrades.Rules(500).LivenessGaps, "Overlay leaves the genesis as it was")

	fixed, err := config.ParseGenesis([]byte(`{"upgrades": {"livenessGapsHeight": 0}}`))
	require.NoError(err)
	_, err = fixed.Upgrades.Overlay(cc.Upgrades)
	require.ErrorIs(err, config.ErrBadChainConfig)
	same, err := config.ParseChainConfig([]byte(`{"upgrades": {"livenessGapsHeight": 0}}`))
	require.NoError(err)
	u, err = fixed.Upgrades.Overlay(same.Upgrades)
	require.NoError(err)
	require.True(u.Rules(0).LivenessGaps)
}

func TestUpgradesAtGenesisInJSON(t *testing.T) {
	b, err := json.Marshal(config.UpgradesAtGenesis())
	require.NoError(t, err)
	g, err := config.ParseGenesis([]byte(`{"upgrades": ` + string(b) + `}`))
	require.NoError(t, err)
	require.Equal(t, config.UpgradesAtGenesis(), g.Upgrades)
}
