// Package patch holds the SeaweedFS patch that makes a master allocate
// through S-Chain, and applies it to a copy of the pinned SeaweedFS module.
//
// The patch is two parts, both reviewed here:
//   - new files: package seaweedfs/schainseq of this module (its non-test
//     files), copied to weed/sequence/schainseq, and the S-Chain packages it
//     builds on (the wire library: errcode, api, client, reservation),
//     copied under weed/sequence/schainseq/internal/schain with their
//     imports of each other rewritten to the copies' paths, and nothing
//     else changed (a test checks the copies against their sources);
//   - hunks: weed.diff, a unified diff against the pinned SeaweedFS version.
//
// The copied packages may import only the standard library and each
// other, so that the patched SeaweedFS keeps its module graph: Apply
// refuses any other import.
//
// Apply is strict so that a new SeaweedFS version fails loudly instead of
// building something unreviewed: every hunk's old lines must occur exactly
// once in the file (an offset is tolerated, a changed line is not), and after
// patching nothing in SeaweedFS may call a sequencer's NextFileId except
// through schainseq (a new caller would bypass the volume-aware, failing path).
package patch

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Diff is the hunks' unified diff.
//
//go:embed weed.diff
var Diff []byte

// PackageDir is where the new package goes in the SeaweedFS tree, and
// PackageSource where it is in this module.
const (
	PackageDir    = "weed/sequence/schainseq"
	PackageSource = "seaweedfs/schainseq"
)

// Library are the packages of this module PackageSource builds on, copied
// under LibraryDir in the SeaweedFS tree at the same relative paths.
var Library = []string{"errcode", "api", "client", "reservation"}

// StoreSource is the S-Chain filer store's package, copied to StoreDir
// beside PackageDir (whose internal library it imports).
const (
	StoreSource = "seaweedfs/schainfiler"
	StoreDir    = PackageDir + "/schainfiler"
)

// TreeSource holds the patch's new SeaweedFS-side files (the filer store's
// adapter, which imports SeaweedFS packages and the copies by their
// SeaweedFS paths), copied as they are into the tree's weed/ directory.
// The go tool skips the directory (its name starts with "_"): those files
// compile only in the SeaweedFS tree.
const TreeSource = "seaweedfs/patch/_weed"

// The module paths the copies' imports are rewritten between.
const (
	Module     = "github.com/s-chain/schain"
	WeedModule = "github.com/seaweedfs/seaweedfs"
	LibraryDir = PackageDir + "/internal/schain"
)

var (
	// ErrUpstreamMoved: the SeaweedFS tree no longer matches the patch.
	ErrUpstreamMoved = errors.New("SeaweedFS source does not match the patch (upstream moved: update seaweedfs/patch/weed.diff)")
	// ErrBadDiff: weed.diff is not a unified diff this package can apply.
	ErrBadDiff = errors.New("malformed patch")
	// ErrForeignImport: a copied package imports something other than the
	// standard library and the other copied packages.
	ErrForeignImport = errors.New("the patch's packages may import only the standard library and each other")
)

// FileDiff is the hunks of one file.
type FileDiff struct {
	Path  string // relative to the SeaweedFS module root
	Hunks []Hunk
}

// Hunk replaces Old with New; Line is the 1-based line Old starts at in the
// version the diff was made against.
type Hunk struct {
	Line     int
	Old, New []string
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@`)

// Parse reads a unified diff whose paths are a/<path> and b/<path>. Hunk
// bodies are read by the line counts of their headers.
func Parse(diff []byte) ([]FileDiff, error) {
	var (
		files            []FileDiff
		cur              *FileDiff
		h                *Hunk
		oldLeft, newLeft int
	)
	lines := strings.Split(strings.TrimSuffix(string(diff), "\n"), "\n")
	for i, line := range lines {
		bad := func(what string) error { return fmt.Errorf("%w: line %d: %s: %q", ErrBadDiff, i+1, what, line) }
		if h != nil && (oldLeft > 0 || newLeft > 0) {
			switch {
			case strings.HasPrefix(line, " "), line == "":
				text := strings.TrimPrefix(line, " ")
				h.Old, h.New = append(h.Old, text), append(h.New, text)
				oldLeft--
				newLeft--
			case strings.HasPrefix(line, "-"):
				h.Old = append(h.Old, line[1:])
				oldLeft--
			case strings.HasPrefix(line, "+"):
				h.New = append(h.New, line[1:])
				newLeft--
			default:
				return nil, bad("unknown hunk line")
			}
			if oldLeft < 0 || newLeft < 0 {
				return nil, bad("hunk longer than its header says")
			}
			continue
		}
		switch {
		case strings.HasPrefix(line, "--- "):
			h = nil
		case strings.HasPrefix(line, "+++ "):
			path, ok := strings.CutPrefix(strings.Fields(line[4:])[0], "b/")
			if !ok {
				return nil, bad("want +++ b/<path>")
			}
			files = append(files, FileDiff{Path: path})
			cur = &files[len(files)-1]
		case strings.HasPrefix(line, "@@"):
			m := hunkHeader.FindStringSubmatch(line)
			if m == nil || cur == nil {
				return nil, bad("hunk header")
			}
			n, _ := strconv.Atoi(m[1])
			oldLeft, newLeft = count(m[2]), count(m[3])
			cur.Hunks = append(cur.Hunks, Hunk{Line: n})
			h = &cur.Hunks[len(cur.Hunks)-1]
		case strings.HasPrefix(line, `\`): // "\ No newline at end of file"
		default:
			return nil, bad("outside a hunk")
		}
	}
	if oldLeft > 0 || newLeft > 0 {
		return nil, fmt.Errorf("%w: last hunk shorter than its header says", ErrBadDiff)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no files", ErrBadDiff)
	}
	return files, nil
}

// count is a hunk header's line count ("" means 1).
func count(s string) int {
	if s == "" {
		return 1
	}
	n, _ := strconv.Atoi(s)
	return n
}

// ApplyTo applies the hunks of fd to content.
func (fd FileDiff) ApplyTo(content []byte) ([]byte, error) {
	lines := strings.Split(string(content), "\n")
	// Later hunks first, so earlier positions stay valid.
	hunks := slices.Clone(fd.Hunks)
	slices.SortFunc(hunks, func(a, b Hunk) int { return b.Line - a.Line })
	for _, h := range hunks {
		at, err := findOnce(lines, h.Old)
		if err != nil {
			return nil, fmt.Errorf("%w: %s, hunk at line %d: %w", ErrUpstreamMoved, fd.Path, h.Line, err)
		}
		lines = slices.Concat(lines[:at], h.New, lines[at+len(h.Old):])
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// findOnce returns where block occurs in lines, requiring exactly one
// occurrence.
func findOnce(lines, block []string) (int, error) {
	found := -1
	for i := 0; i+len(block) <= len(lines); i++ {
		if slices.Equal(lines[i:i+len(block)], block) {
			if found >= 0 {
				return 0, fmt.Errorf("its old lines occur at lines %d and %d", found+1, i+1)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("its old lines (starting %q) are not in the file", first(block))
	}
	return found, nil
}

func first(block []string) string {
	for _, l := range block {
		if strings.TrimSpace(l) != "" {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// copies maps each copied package of this module to its directory in the
// SeaweedFS tree.
func copies() map[string]string {
	out := map[string]string{PackageSource: PackageDir, StoreSource: StoreDir}
	for _, p := range Library {
		out[p] = LibraryDir + "/" + p
	}
	return out
}

// Sources returns the new files as they go into the SeaweedFS tree (path
// relative to its root → content), tests excluded: the packages and the
// library, imports of each other rewritten to the copies' paths, and the
// SeaweedFS-side files of TreeSource as they are.
func Sources(repoRoot string) (map[string][]byte, error) {
	out, err := copiedSources(repoRoot)
	if err != nil {
		return nil, err
	}
	tree := filepath.Join(repoRoot, filepath.FromSlash(TreeSource))
	err = filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, err := filepath.Rel(tree, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		out["weed/"+filepath.ToSlash(rel)] = b
		return err
	})
	return out, err
}

// copiedSources are the copied packages of this module.
func copiedSources(repoRoot string) (map[string][]byte, error) {
	dirs := copies()
	out := make(map[string][]byte)
	for src, dst := range dirs {
		dir := filepath.Join(repoRoot, filepath.FromSlash(src))
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			if b, err = rewriteImports(src+"/"+name, b, dirs); err != nil {
				return nil, err
			}
			out[dst+"/"+name] = b
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("no Go files in %s", dir)
		}
	}
	return out, nil
}

// rewriteImports points a copied file's imports of copied packages at the
// copies, and refuses any import that is neither the standard library nor
// a copied package. Only the import paths change.
func rewriteImports(name string, src []byte, dirs map[string]string) ([]byte, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []byte
	last := 0
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		first, _, _ := strings.Cut(path, "/")
		if !strings.Contains(first, ".") {
			continue // the standard library
		}
		rel, ok := strings.CutPrefix(path, Module+"/")
		dst, copied := dirs[rel]
		if !ok || !copied {
			return nil, fmt.Errorf("%w: %s imports %s", ErrForeignImport, name, path)
		}
		start, end := int(imp.Path.Pos())-1, int(imp.Path.End())-1
		out = append(append(out, src[last:start]...), strconv.Quote(WeedModule+"/"+dst)...)
		last = end
	}
	return append(out, src[last:]...), nil
}

// Digest identifies the patch: the diff and the new files. The build
// stamps build/weed with it, so a changed patch rebuilds.
func Digest(repoRoot string) (string, error) {
	src, err := Sources(repoRoot)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(Diff)
	names := make([]string, 0, len(src))
	for n := range src {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", n, len(src[n]))
		h.Write(src[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Apply patches the SeaweedFS tree at weedRoot (a writable copy of the
// module) with the packages from repoRoot and the hunks. With dryRun it
// checks everything and writes nothing. On error nothing is written.
func Apply(repoRoot, weedRoot string, dryRun bool) error {
	files, err := Parse(Diff)
	if err != nil {
		return err
	}
	src, err := Sources(repoRoot)
	if err != nil {
		return err
	}
	patched := make(map[string][]byte, len(files))
	for _, fd := range files {
		path := filepath.Join(weedRoot, filepath.FromSlash(fd.Path))
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUpstreamMoved, err)
		}
		if patched[path], err = fd.ApplyTo(b); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(weedRoot, filepath.FromSlash(PackageDir))); err == nil {
		return fmt.Errorf("%w: %s exists already (apply to a fresh copy)", ErrUpstreamMoved, PackageDir)
	}
	for rel := range src {
		if _, err := os.Stat(filepath.Join(weedRoot, filepath.FromSlash(rel))); err == nil {
			return fmt.Errorf("%w: %s exists already (apply to a fresh copy)", ErrUpstreamMoved, rel)
		}
	}
	if err := routeLeaders(weedRoot, patched); err != nil {
		return err
	}
	if err := checkCallers(weedRoot, patched); err != nil {
		return err
	}
	if dryRun {
		return nil
	}
	for path, b := range patched {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	for rel, b := range src {
		path := filepath.Join(weedRoot, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

var nextFileIDCall = regexp.MustCompile(`(\w*)\.NextFileId\(`)

// checkCallers fails if any non-test Go file of the tree, as patched, calls
// a NextFileId other than schainseq.NextFileId outside weed/sequence.
func checkCallers(weedRoot string, patched map[string][]byte) error {
	var found []string
	err := walkGo(weedRoot, patched, func(rel, _ string, b []byte) error {
		if strings.HasPrefix(rel, "weed/sequence/") || !bytes.Contains(b, []byte(".NextFileId(")) {
			return nil
		}
		for i, line := range bytes.Split(b, []byte("\n")) {
			for _, m := range nextFileIDCall.FindAllSubmatch(line, -1) {
				if string(m[1]) != "schainseq" {
					found = append(found, fmt.Sprintf("%s:%d", rel, i+1))
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: NextFileId is called outside the patched path at %s", ErrUpstreamMoved, strings.Join(found, ", "))
	}
	return nil
}

// walkGo calls f with every non-test Go file under weed/ of the tree: its
// path relative to weedRoot (slash-separated), its path, and its content as
// patched.
func walkGo(weedRoot string, patched map[string][]byte, f func(rel, path string, b []byte) error) error {
	return filepath.WalkDir(filepath.Join(weedRoot, "weed"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, ok := patched[path]
		if !ok {
			if b, err = os.ReadFile(path); err != nil {
				return err
			}
		}
		rel, _ := filepath.Rel(weedRoot, path)
		return f(filepath.ToSlash(rel), path, b)
	})
}
