package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// DocSteps returns what a reader of a Markdown file follows after marker
// (a phrase that occurs once in it): the prose up to the first fenced code
// block after the marker, that block's content, and the prose after it up
// to the next block. Tests that take their
// commands and values from here, rather than restating them, fail when the
// documented steps stop working, so the docs stay true word for word.
func DocSteps(t testing.TB, path, marker string) (prose, block, after string) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if n := strings.Count(text, marker); n != 1 {
		t.Fatalf("%s: %q occurs %d times, want once", path, marker, n)
	}
	_, rest, _ := strings.Cut(text, marker)
	prose, fenced, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatalf("%s: no code block after %q", path, marker)
	}
	_, fenced, _ = strings.Cut(fenced, "\n") // the fence's language
	block, after, ok = strings.Cut(fenced, "\n```")
	if !ok {
		t.Fatalf("%s: the code block after %q is not closed", path, marker)
	}
	after, _, _ = strings.Cut(after, "\n```")
	return prose, block + "\n", after
}
