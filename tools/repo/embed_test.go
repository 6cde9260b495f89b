package repo_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// TestShippedCodeEmbedsNoTestdata: what ships (functions/, shared/, cmd/,
// internal/) embeds only what it serves (the CLI's sample deliveries for
// inboxctl send, Stripe's sample objects, the console's templates, the
// payload dictionary), never a test's data: testdata/ is the tests'.
func TestShippedCodeEmbedsNoTestdata(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	embeds := 0
	for _, dir := range []string{"functions", "shared", "cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for n := 1; sc.Scan(); n++ {
				line := strings.TrimSpace(sc.Text())
				if !strings.HasPrefix(line, "//go:embed ") {
					continue
				}
				embeds++
				for _, pattern := range strings.Fields(strings.TrimPrefix(line, "//go:embed ")) {
					if pattern == "testdata" || strings.HasPrefix(pattern, "testdata/") || strings.Contains(pattern, "/testdata") {
						rel, _ := filepath.Rel(root, path)
						t.Errorf("%s:%d embeds %s: shipped code embeds what it serves, never testdata/ (move it beside the code under a name that says what it is)", rel, n, pattern)
					}
				}
			}
			return sc.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if embeds < 3 {
		t.Errorf("found %d go:embed directives in what ships, want the CLI's, the console's and the store's (at least 3)", embeds)
	}
}
