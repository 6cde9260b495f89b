package repo_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// TestChangelogHasOneHeadingOfEachKindPerRelease holds CHANGELOG.md to
// Keep a Changelog's shape: each release (and Unreleased) has at most one
// heading of each kind, from the kinds it names, so a reader looking for
// what a release fixed reads one list.
func TestChangelogHasOneHeadingOfEachKindPerRelease(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
	release, seen, releases := "", map[string]bool{}, 0
	for i, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			release, seen = strings.TrimPrefix(line, "## "), map[string]bool{}
			releases++
		case strings.HasPrefix(line, "### "):
			kind := strings.TrimPrefix(line, "### ")
			if !slices.Contains(kinds, kind) {
				t.Errorf("CHANGELOG.md:%d: %q under %s is not one of Keep a Changelog's kinds %v", i+1, kind, release, kinds)
			}
			if seen[kind] {
				t.Errorf("CHANGELOG.md:%d: a second %q heading under %s: one heading of each kind per release", i+1, kind, release)
			}
			seen[kind] = true
		}
	}
	if releases < 10 {
		t.Errorf("CHANGELOG.md: %d release headings, want every release (more than 10)", releases)
	}
}
