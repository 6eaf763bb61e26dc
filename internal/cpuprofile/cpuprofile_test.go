package cpuprofile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRotation drives the profiler with its own ticks: every tick completes
// one profile, and only MaxFiles complete ones stay beside the newest.
func TestRotation(t *testing.T) {
	require := require.New(t)
	dir := filepath.Join(t.TempDir(), "profiles")
	ticks := make(chan time.Time)
	p, err := start(Config{Dir: dir, Prefix: "plugin-x", MaxFiles: 2}, ticks)
	require.NoError(err)
	for range 4 {
		ticks <- time.Time{} // unbuffered: the previous rotation is done
	}
	require.NoError(p.Stop())

	var names []string
	ents, err := os.ReadDir(dir)
	require.NoError(err)
	for _, e := range ents {
		names = append(names, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(err)
		require.True(bytes.HasPrefix(b, []byte{0x1f, 0x8b}), "%s is a gzipped pprof profile", e.Name())
	}
	require.Equal([]string{"plugin-x.2.pprof", "plugin-x.3.pprof", "plugin-x.4.pprof"}, names)

	// The process can be profiled again once stopped.
	p, err = start(Config{Dir: dir, Prefix: "again", MaxFiles: 1}, make(chan time.Time))
	require.NoError(err)
	require.NoError(p.Stop())
	require.FileExists(filepath.Join(dir, "again.0.pprof"))
}

func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []Config{
		{Dir: "", Prefix: "p", Every: time.Second, MaxFiles: 1},
		{Dir: dir, Prefix: "", Every: time.Second, MaxFiles: 1},
		{Dir: dir, Prefix: "p", Every: time.Second, MaxFiles: 0},
		{Dir: dir, Prefix: "p", Every: 0, MaxFiles: 1},
	} {
		_, err := Start(c)
		require.ErrorIs(t, err, ErrBadConfig, "%+v", c)
	}
}
