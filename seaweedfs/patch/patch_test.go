package patch

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/seaweedfs/schainseq"
)

const sample = `--- a/weed/x/x.go
+++ b/weed/x/x.go
@@ -2,3 +2,4 @@
 func f() {
-	a()
+	b()
+	c()
 }
`

func TestParse(t *testing.T) {
	files, err := Parse([]byte(sample))
	require.NoError(t, err)
	require.Equal(t, []FileDiff{{Path: "weed/x/x.go", Hunks: []Hunk{{
		Line: 2, Old: []string{"func f() {", "\ta()", "}"}, New: []string{"func f() {", "\tb()", "\tc()", "}"},
	}}}}, files)

	for name, bad := range map[string]string{
		"no files":       "",
		"junk":           "hello\n",
		"short hunk":     strings.TrimSuffix(sample, " }\n"),
		"long hunk":      strings.Replace(sample, "@@ -2,3 +2,4 @@", "@@ -2,2 +2,3 @@", 1),
		"path without b": strings.Replace(sample, "+++ b/", "+++ ", 1),
	} {
		_, err := Parse([]byte(bad))
		require.ErrorIs(t, err, ErrBadDiff, name)
	}
}

func TestApplyToToleratesAnOffsetNotAChange(t *testing.T) {
	files, err := Parse([]byte(sample))
	require.NoError(t, err)
	fd := files[0]
	out, err := fd.ApplyTo([]byte("package x\n\n// a new comment upstream\nfunc f() {\n\ta()\n}\n"))
	require.NoError(t, err)
	require.Equal(t, "package x\n\n// a new comment upstream\nfunc f() {\n\tb()\n\tc()\n}\n", string(out))

	_, err = fd.ApplyTo([]byte("package x\nfunc f() {\n\ta(1)\n}\n"))
	require.ErrorIs(t, err, ErrUpstreamMoved, "a changed line")
	_, err = fd.ApplyTo([]byte("func f() {\n\ta()\n}\nfunc f() {\n\ta()\n}\n"))
	require.ErrorIs(t, err, ErrUpstreamMoved, "an ambiguous place")
}

// fakeWeed writes the upstream versions of the files the real diff
// touches, reconstructed from the diff's old lines, under dir.
func fakeWeed(t *testing.T, dir string) {
	files, err := Parse(Diff)
	require.NoError(t, err)
	for _, fd := range files {
		var b strings.Builder
		b.WriteString("package p\n")
		for _, h := range fd.Hunks {
			b.WriteString("\n// between hunks\n")
			b.WriteString(strings.Join(h.Old, "\n"))
			b.WriteString("\n")
		}
		path := filepath.Join(dir, filepath.FromSlash(fd.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	for _, site := range LeaderSites {
		addLeaderCalls(t, dir, site.File, site.Func, len(site.Ops))
	}
}

// addLeaderCalls appends function fn ("Recv.Name" or "Name") with n
// IsLeader() calls to the fake tree's file rel, creating it if needed.
func addLeaderCalls(t *testing.T, dir, rel, fn string, n int) {
	path := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		b, err = []byte("package p\n"), nil
	}
	require.NoError(t, err)
	src := string(b)
	if !strings.Contains(src, "\nimport (\n") {
		src = strings.Replace(src, "\n", "\n\nimport (\n\t\"fmt\"\n)\n", 1)
	}
	recv, name, ok := strings.Cut(fn, ".")
	head := "func " + recv + "() {\n"
	if ok {
		head = "func (x *" + recv + ") " + name + "() {\n"
	}
	src += "\n" + head + strings.Repeat("\tif x.Topo.IsLeader() {\n\t}\n", n) + "}\n"
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

func TestApplyWritesHunksAndPackage(t *testing.T) {
	require := require.New(t)
	dir := t.TempDir()
	fakeWeed(t, dir)
	require.NoError(Apply(repoRoot(t), dir, true))
	_, err := os.Stat(filepath.Join(dir, PackageDir))
	require.ErrorIs(err, os.ErrNotExist, "a dry run writes nothing")

	require.NoError(Apply(repoRoot(t), dir, false))
	topo, err := os.ReadFile(filepath.Join(dir, "weed/topology/topology.go"))
	require.NoError(err)
	require.Contains(string(topo), "schainseq.NextFileId(t.Sequence, uint32(vid), requestedCount)")
	require.NotContains(string(topo), "t.Sequence.NextFileId(")
	src, err := Sources(repoRoot(t))
	require.NoError(err)
	for name := range src {
		require.FileExists(filepath.Join(dir, PackageDir, name))
		require.False(strings.HasSuffix(name, "_test.go"))
	}
	require.ErrorIs(Apply(repoRoot(t), dir, false), ErrUpstreamMoved, "applying twice fails")
}

func TestApplyRefusesANewNextFileIdCaller(t *testing.T) {
	dir := t.TempDir()
	fakeWeed(t, dir)
	extra := filepath.Join(dir, "weed/server/new_feature.go")
	require.NoError(t, os.WriteFile(extra, []byte("package p\nfunc g() { _ = ms.Topo.Sequence.NextFileId(1) }\n"), 0o644))
	err := Apply(repoRoot(t), dir, true)
	require.ErrorIs(t, err, ErrUpstreamMoved)
	require.ErrorContains(t, err, "weed/server/new_feature.go:2")
}

func TestApplyRoutesEveryLeaderCheck(t *testing.T) {
	require := require.New(t)
	dir := t.TempDir()
	fakeWeed(t, dir)
	require.NoError(Apply(repoRoot(t), dir, false))
	perFile := map[string]int{}
	for _, site := range LeaderSites {
		perFile[site.File] += len(site.Ops)
	}
	for rel, n := range perFile {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		require.NoError(err)
		src := string(b)
		require.Equal(n, strings.Count(src, "schainseq.Leads(x.Topo.Sequence, schainseq."), rel)
		require.Zero(strings.Count(src, "IsLeader()"), "%s: every call goes through the hook", rel)
		require.Equal(1, strings.Count(src, schainseqImport), rel)
	}
	b, err := os.ReadFile(filepath.Join(dir, "weed/topology/topology_event_handling.go"))
	require.NoError(err)
	scan := strings.Index(string(b), "schainseq.OpScan")
	vacuum := strings.Index(string(b), "schainseq.OpVacuum")
	require.True(scan >= 0 && vacuum > scan, "each call gets its own operation, in order")
	b, err = os.ReadFile(filepath.Join(dir, "weed/server/master_server.go"))
	require.NoError(err)
	require.Contains(string(b), "schainseq.Leads(x.Topo.Sequence, schainseq.HTTPOp(r.URL.Path), x.Topo.IsLeader)")
}

func TestApplyRefusesAnUncoveredLeaderCheck(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(t *testing.T, dir string)
		want   string
	}{
		"a new function": {func(t *testing.T, dir string) {
			addLeaderCalls(t, dir, "weed/server/master_grpc_server_volume.go", "MasterServer.NewLeaderPath", 1)
		}, "MasterServer.NewLeaderPath is not a LeaderSite"},
		"a new file": {func(t *testing.T, dir string) {
			addLeaderCalls(t, dir, "weed/server/master_grpc_server_new.go", "MasterServer.Fresh", 1)
		}, "weed/server/master_grpc_server_new.go:"},
		"another call in a named function": {func(t *testing.T, dir string) {
			addLeaderCalls(t, dir, "weed/server/master_grpc_server_assign.go", "MasterServer.Assign", 1)
		}, "MasterServer.Assign calls IsLeader() 2 times, LeaderSites names 1"},
		"a named function gone": {func(t *testing.T, dir string) {
			path := filepath.Join(dir, "weed/telemetry/collector.go")
			require.NoError(t, os.WriteFile(path, []byte("package p\n"), 0o644))
		}, "weed/telemetry/collector.go Collector.isLeader"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			fakeWeed(t, dir)
			c.mutate(t, dir)
			err := Apply(repoRoot(t), dir, true)
			require.ErrorIs(t, err, ErrUpstreamMoved)
			require.ErrorContains(t, err, c.want)
		})
	}
	// The Kafka gateway's own IsLeader() is not a master's.
	dir := t.TempDir()
	fakeWeed(t, dir)
	addLeaderCalls(t, dir, OtherLeaderFiles[0], "CoordinatorRegistry.Serve", 2)
	require.NoError(t, Apply(repoRoot(t), dir, true))
}

func TestEveryOperationHasAName(t *testing.T) {
	for _, op := range schainseq.Ops() {
		require.NotEmpty(t, opIdents[op], "%v", op)
		require.NotEmpty(t, op.String())
	}
	require.Len(t, opIdents, len(schainseq.Ops()))
}

func TestDigestChangesWithThePatch(t *testing.T) {
	d, err := Digest(repoRoot(t))
	require.NoError(t, err)
	require.Len(t, d, 16)
	saved := Diff
	defer func() { Diff = saved }()
	Diff = append([]byte("x"), saved...)
	d2, err := Digest(repoRoot(t))
	require.NoError(t, err)
	require.NotEqual(t, d, d2)
}

// TestApplyToThePinnedModule applies the real patch to the pinned SeaweedFS
// module when the module cache has it (`make weed` downloads it); CI's unit
// stage runs before that, and `make weed` applies the patch itself.
func TestApplyToThePinnedModule(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	script, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", "build-weed.sh"))
	require.NoError(t, err)
	var version string
	for _, line := range strings.Split(string(script), "\n") {
		if v, ok := strings.CutPrefix(line, "version=${WEED_VERSION:-"); ok {
			version = strings.TrimSuffix(v, "}")
		}
	}
	require.NotEmpty(t, version)
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "seaweedfs", "seaweedfs@"+version)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("seaweedfs@%s is not in the module cache (make weed downloads it)", version)
	}
	require.NoError(t, Apply(repoRoot(t), dir, true))
}

// TestHunksLeaveLeaderChecksToTheHook: no hunk touches or quotes an
// IsLeader() call; the applier routes every one of them (LeaderSites), so a
// hunk that did would be routed twice or escape the count.
func TestHunksLeaveLeaderChecksToTheHook(t *testing.T) {
	files, err := Parse(Diff)
	require.NoError(t, err)
	for _, fd := range files {
		for _, h := range fd.Hunks {
			for _, l := range append(slices.Clone(h.Old), h.New...) {
				require.NotContains(t, l, "IsLeader()", "%s, hunk at line %d", fd.Path, h.Line)
			}
		}
	}
}
