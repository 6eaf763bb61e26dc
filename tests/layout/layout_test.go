package layout

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/s-chain/schain"

// shipped are the packages whose dependencies ship: the plugin a node
// runs, the code built into SeaweedFS's weed and its patcher, and the
// operator's CLI.
var shipped = []string{"./plugin", "./seaweedfs/...", "./cmd/weedpatch", "./cmd/schain"}

// forbidden says why a dependency must not ship ("" if it may).
func forbidden(pkg string) string {
	switch {
	case strings.HasPrefix(pkg, module+"/tests/"):
		return "the test harness"
	case strings.HasPrefix(pkg, module+"/tools/"):
		return "the tools"
	case pkg == "github.com/hashicorp/raft" || strings.HasPrefix(pkg, "github.com/hashicorp/raft/"),
		strings.HasPrefix(pkg, "github.com/hashicorp/raft-boltdb"):
		return "the legacy raft stand-in's raft"
	case strings.HasPrefix(pkg, "gonum.org/v1/plot"):
		return "the plots"
	case strings.HasPrefix(pkg, "github.com/schollz/progressbar"):
		return "the progress bar"
	}
	return ""
}

// TestShippedCodeLinksNoTooling: go list -deps of every shipped package
// holds nothing of the harness or the tools. A development command belongs
// in tools/cmd/schain-dev, which may link them.
func TestShippedCodeLinksNoTooling(t *testing.T) {
	for _, pkg := range shipped {
		t.Run(pkg, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
			cmd.Dir = filepath.Join("..", "..")
			out, err := cmd.Output()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
			}
			require.NoError(t, err)
			var bad []string
			for _, dep := range strings.Fields(string(out)) {
				if why := forbidden(dep); why != "" {
					bad = append(bad, dep+" ("+why+")")
				}
			}
			require.Empty(t, bad, "%s links code that must not ship", pkg)
		})
	}
}

// TestForbidden: the rule recognizes what it must (the test above passes
// trivially if it recognizes nothing).
func TestForbidden(t *testing.T) {
	for _, pkg := range []string{
		module + "/tests/framework/localnet", module + "/tools/benchmark", "github.com/hashicorp/raft",
		"github.com/hashicorp/raft-boltdb/v2", "gonum.org/v1/plot/vg", "github.com/schollz/progressbar/v3",
	} {
		require.NotEmpty(t, forbidden(pkg), pkg)
	}
	for _, pkg := range []string{module + "/vm", module + "/operator/cutover", "github.com/hashicorp/go-hclog", "github.com/ava-labs/avalanchego/vms"} {
		require.Empty(t, forbidden(pkg), pkg)
	}
}
