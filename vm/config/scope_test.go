package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/config"
)

func TestScopeCovers(t *testing.T) {
	scope := func(ranges ...string) config.Scope {
		return config.WriteToken{Name: "t", Ranges: ranges, Methods: []string{"allocate"}}.Scope()
	}
	tests := []struct {
		ranges []string
		in     []string
		out    []string
	}{
		{[]string{"prod-eu1/*"},
			[]string{"prod-eu1/photos", "prod-eu1/a/b/c"},
			[]string{"prod-eu1", "prod-eu2/photos", "prod-eu1/volumes", "prod-eu1/keys/0", "prod-eu1/keys/3", "prod-eu1/keys", "prod-eu1/floor/keys", "prod-eu1/floor/volumes", "prod-eu1/x/floor/y", "photos"}},
		{[]string{"photos"}, []string{"photos"}, []string{"photos/x", "photo", "x/photos"}},
		{[]string{"*"}, []string{"photos", "a/b/c"}, []string{"volumes", "a/volumes", "a/floor/keys", "a/keys/0", "keys"}},
		{[]string{"prod-eu1/keys/*", "prod-eu1/volumes"}, []string{"prod-eu1/keys/0", "prod-eu1/keys/4095", "prod-eu1/volumes"}, []string{"prod-eu1/photos", "prod-eu1/floor/keys", "prod-eu1/keys", "prod-eu2/keys/0"}},
		{[]string{"*/keys/*"}, []string{"a/keys/0"}, []string{"a/floor/keys", "a/volumes", "a/b"}},
		{[]string{"prod-eu1/floor/*"}, []string{"prod-eu1/floor/keys", "prod-eu1/floor/volumes"}, []string{"prod-eu1/volumes", "prod-eu1/keys/0"}},
		{[]string{"*/floor/*", "*/volumes"}, []string{"a/floor/keys", "b/volumes"}, []string{"a/keys/0", "a/b/volumes", "volumes", "floor/x/floor/keys"}},
		{[]string{"*/photos"}, []string{"a/photos"}, []string{"a/b/photos", "photos", "floor/photos"}},
	}
	for _, tt := range tests {
		s := scope(tt.ranges...)
		for _, rk := range tt.in {
			require.True(t, s.Covers(rk), "%v covers %s", tt.ranges, rk)
		}
		for _, rk := range tt.out {
			require.False(t, s.Covers(rk), "%v does not cover %s", tt.ranges, rk)
		}
	}
	unscoped := config.WriteToken{Name: "t"}.Scope()
	require.True(t, unscoped.Unscoped())
	for _, rk := range []string{"a/floor/keys", "a/volumes", "x"} {
		require.True(t, unscoped.Covers(rk), "a token written before scopes writes %s", rk)
	}
}

func TestScopeAllows(t *testing.T) {
	s := config.WriteToken{Name: "t", Ranges: []string{"*"}, Methods: []string{"allocate", "allocateBatch"}}.Scope()
	require.True(t, s.Allows("allocate"))
	require.False(t, s.Allows("putManifest"))
	every := config.WriteToken{Name: "t", Ranges: []string{"*"}, Methods: []string{config.EveryMethod}}.Scope()
	require.True(t, every.Allows("putLease"), "a future method")
	require.True(t, config.WriteToken{Name: "t"}.Scope().Allows("putManifest"))
}

func TestScopeInChainConfig(t *testing.T) {
	hash := config.TokenHash("x")
	bad := map[string]string{
		"ranges without methods": `{"name": "a", "sha256": "` + hash + `", "ranges": ["a/*"]}`,
		"methods without ranges": `{"name": "a", "sha256": "` + hash + `", "methods": ["allocate"]}`,
		"empty ranges":           `{"name": "a", "sha256": "` + hash + `", "ranges": [], "methods": ["allocate"]}`,
		"a partial wildcard":     `{"name": "a", "sha256": "` + hash + `", "ranges": ["a/b*"], "methods": ["allocate"]}`,
		"an empty segment":       `{"name": "a", "sha256": "` + hash + `", "ranges": ["a//b"], "methods": ["allocate"]}`,
		"a trailing slash":       `{"name": "a", "sha256": "` + hash + `", "ranges": ["a/"], "methods": ["allocate"]}`,
		"a method with a dot":    `{"name": "a", "sha256": "` + hash + `", "ranges": ["a"], "methods": ["schain.allocate"]}`,
	}
	for name, entry := range bad {
		_, err := config.ParseChainConfig([]byte(`{"writeTokens": [` + entry + `]}`))
		require.ErrorIs(t, err, config.ErrBadChainConfig, name)
		require.Contains(t, err.Error(), "writeTokens[0] (a)", name)
	}
	cc, err := config.ParseChainConfig([]byte(`{"writeTokens": [{"name": "a", "sha256": "` + hash + `", "ranges": ["a/*", "a/floor/*"], "methods": ["allocate", "*"]}]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"a/*", "a/floor/*"}, cc.WriteTokens[0].Ranges)
	require.Equal(t, []string{"a", "b c"}, config.ParseList(" a, ,b c,"))
}
