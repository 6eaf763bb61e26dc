package legacyraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   error
	}{
		{name: "default", mutate: func(*Config) {}},
		{name: "no id", mutate: func(c *Config) { c.ID = "" }, want: errNoID},
		{name: "bad mode", mutate: func(c *Config) { c.Mode = "x" }, want: errBadMode},
		{name: "public bind", mutate: func(c *Config) { c.Bind = "0.0.0.0:1" }, want: errNotLoopback},
		{name: "public http", mutate: func(c *Config) { c.HTTPBind = "10.0.0.1:1" }, want: errNotLoopback},
		{name: "self missing", mutate: func(c *Config) { c.ID = "other" }, want: errNoSelf},
		{name: "duplicate peer", mutate: func(c *Config) { c.Peers = append(c.Peers, c.Peers[0]) }, want: errDuplicatePeer},
		{name: "public peer", mutate: func(c *Config) { c.Peers[0].RaftAddr = "1.2.3.4:5" }, want: errNotLoopback},
		{name: "beside the benchmarking range", mutate: func(c *Config) { c.HTTPBind = "198.20.0.1:1" }, want: errNotLoopback},
		{name: "a bench host", mutate: func(c *Config) {
			c.Bind, c.HTTPBind, c.Peers[0].RaftAddr = "198.18.30.5:7000", "198.19.0.1:7100", "198.18.30.5:7000"
		}},
		{name: "zero groups", mutate: func(c *Config) { c.Mode, c.Groups = ModeSlots, 0 }, want: errBadGroups},
		{name: "too many groups", mutate: func(c *Config) { c.Mode, c.Groups = ModeSlots, 257 }, want: errBadGroups},
		{name: "zero timeout", mutate: func(c *Config) { c.ApplyTimeout = 0 }, want: errBadDuration},
		{name: "negative warm-up", mutate: func(c *Config) { c.WarmUp = -1 }, want: errBadDuration},
		{name: "zero batch", mutate: func(c *Config) { c.BatchMaxRecords = 0 }, want: errBadBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Peers = append([]Peer(nil), c.Peers...)
			tt.mutate(&c)
			err := c.Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestGroupAddr(t *testing.T) {
	addr, err := groupAddr("127.0.0.1:7000", 3)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7003", addr)
}
