// Package docs checks the repository's documentation as a reader meets it:
// every link in README.md and docs/ (and its folders) resolves to a file of the repository.
// It is for the test run (make unit), not for the product.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// link is a Markdown inline link's target: ](target) or ](target "title").
var link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinksResolveInTheRepository: a relative link must name a file or
// folder that exists, inside the repository (a clone has nothing beside
// it); web links and in-page anchors are not checked.
func TestDocLinksResolveInTheRepository(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	files := []string{filepath.Join(root, "README.md")}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)
	require.Greater(t, len(files), 5, "README.md and docs/**/*.md")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Clean(filepath.Join(filepath.Dir(f), target))
			rel, err := filepath.Rel(root, path)
			require.NoError(t, err)
			if strings.HasPrefix(rel, "..") {
				t.Errorf("%s links to %s, outside the repository", relTo(root, f), m[1])
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", relTo(root, f), m[1])
			}
			checked++
		}
	}
	require.Positive(t, checked)
}

func relTo(root, f string) string {
	r, err := filepath.Rel(root, f)
	if err != nil {
		return f
	}
	return r
}
