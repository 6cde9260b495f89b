package version

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// release is a Keep a Changelog release heading: ## [1.2.3] - 2026-11-30.
var release = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d\d-\d\d`)

// TestVersionIsTheNewestRelease: the version the code reports is the
// newest release in CHANGELOG.md, so a version seen in a log line leads to
// what that release changed.
func TestVersionIsTheNewestRelease(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := release.FindSubmatch(src)
	if m == nil {
		t.Fatal("CHANGELOG.md has no release heading like `## [0.17.0] - 2026-11-30`")
	}
	if got := string(m[1]); got != Version {
		t.Errorf("CHANGELOG.md's newest release is %s, version.Version is %s: bump one to the other", got, Version)
	}
	if !regexp.MustCompile(`(?m)^## \[Unreleased\]`).Match(src) {
		t.Error("CHANGELOG.md has no [Unreleased] section above the releases (Keep a Changelog)")
	}
}
