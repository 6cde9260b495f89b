package ownership

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Owner is a package that alone reads and writes a table.
type Owner struct {
	// Dir is the package's directory, relative to the repository root and
	// slash-separated ("shared/storage/store").
	Dir string
	// Vocabulary: see Rules.
	Vocabulary map[string]string
	// Except: see Rules.
	Except map[string]string
	// Others are the other owners' directories: there, the names they own
	// too are theirs (two tables may each have an attribute of one name).
	Others []string
}

// Check fails t for each use of a name owner owns in the repository's Go
// files outside owner.Dir. It runs in a test of the owner's package,
// whose working directory is the package's own.
func Check(t testing.TB, owner Owner) {
	t.Helper()
	root := Root(t)
	names, err := Owned(filepath.Join(root, filepath.FromSlash(owner.Dir)))
	if err != nil {
		t.Fatal(err)
	}
	// A scan for nothing passes whatever the code does.
	if len(names) < 5 {
		t.Fatalf("%s owns %d names (%q), want its attributes and indexes", owner.Dir, len(names), names)
	}
	for n := range owner.Vocabulary {
		if !slices.Contains(names, n) {
			t.Errorf("vocabulary %q is not a name %s owns", n, owner.Dir)
		}
	}
	rules := Rules{Names: names, Vocabulary: owner.Vocabulary, Except: owner.Except, AllowedIn: map[string][]string{}}
	for _, other := range owner.Others {
		theirs, err := Owned(filepath.Join(root, filepath.FromSlash(other)))
		if err != nil {
			t.Fatal(err)
		}
		rules.AllowedIn[other] = theirs
	}
	// This package's own tests are about the names, on purpose.
	found, files, err := Scan(root, []string{owner.Dir, "tools/ownership"}, rules)
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files under %s, want the whole repository", files, root)
	}
	for _, f := range found {
		t.Errorf("%s names %q, which %s owns (%s): ask %s instead", f.Pos, f.Name, owner.Dir, f.Rule, owner.Dir)
	}
}

// Root returns the repository's root: the nearest directory above the
// working directory that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
