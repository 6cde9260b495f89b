package docs_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// mapRow is a row of the README's "Where things live": the paths of its
// first column and every name its cells show in code spans.
type mapRow struct {
	paths []string
	names map[string]bool
}

// readmeMap reads the table of the README's "Where things live".
func readmeMap(t *testing.T, root, readme string) []mapRow {
	t.Helper()
	start := strings.Index(readme, "\n## Where things live\n")
	if start < 0 {
		t.Fatal(`README.md has no "## Where things live"`)
	}
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	code := regexp.MustCompile("`([^`]+)`")
	var rows []mapRow
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 2 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "path" {
			continue
		}
		r := mapRow{names: map[string]bool{}}
		for _, m := range code.FindAllStringSubmatch(cells[0], -1) {
			// A path has a slash or is at the root; a bare word beside one
			// (`shared/boot` (`receiverboot`, ...)) names a package in it.
			if p := strings.TrimSuffix(m[1], "/"); strings.Contains(m[1], "/") || exists(filepath.Join(root, p)) {
				r.paths = append(r.paths, p)
			}
		}
		for _, m := range code.FindAllStringSubmatch(line, -1) {
			r.names[strings.TrimSuffix(m[1], "/")] = true
		}
		rows = append(rows, r)
	}
	if len(rows) < 10 {
		t.Fatalf("README.md's map: %d rows, want the whole tree", len(rows))
	}
	return rows
}

// TestReadmeMapNamesEveryPackage holds the README's map to the tree:
// every path its first column names exists, and every Go package is in it,
// by its path, or by its name (or its path) in the row of a directory
// above it ("tools/" naming `devstack`, "shared/boot" naming
// `receiverboot`). A package added, moved or removed without the map
// fails here.
func TestReadmeMapNamesEveryPackage(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := readmeMap(t, root, string(readme))
	for _, r := range rows {
		for _, p := range r.paths {
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("README.md's map names %s, which is not in the tree", p)
			}
		}
	}
	cmd := exec.Command("go", "list", "-tags", "browser", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if strings.Contains("/"+rel+"/", "/testdata/") {
			continue
		}
		if !named(rows, rel) {
			t.Errorf("package %s is not in README.md's map (\"Where things live\"): add it to the row of its directory", rel)
		}
	}
}

// named reports whether a row names the package at rel.
func named(rows []mapRow, rel string) bool {
	for _, r := range rows {
		for _, p := range r.paths {
			if p == rel {
				return true
			}
			if strings.HasPrefix(rel, p+"/") && (r.names[path.Base(rel)] || r.names[rel] || r.names[strings.TrimPrefix(rel, p+"/")]) {
				return true
			}
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
