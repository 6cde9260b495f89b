package docs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/cli"
	"github.com/webhook-inbox/webhook-inbox/tools/docs"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/samconfig"
)

// pending are documents other changes are writing now. A link to one may
// name no anchor until it exists; once it does, the test says to remove it
// from here.
var pending = map[string]string{}

// checker is a Checker for this repository.
func checker(t *testing.T) (*docs.Checker, string) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := docs.TestNames(root)
	if err != nil {
		t.Fatal(err)
	}
	envs, err := samconfig.Load(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	samEnvs := map[string]bool{}
	for name := range envs {
		samEnvs[name] = true
	}
	return &docs.Checker{Root: root, Targets: docs.MakeTargets(makefile), CLI: cli.Command(), Tests: tests, SamEnvs: samEnvs, Pending: pending}, root
}

// TestDocs reads README.md and docs/*.md: every make target and inboxctl
// command and flag they show exists, every sam command deploys a
// samconfig.toml environment (never --guided), no command carries a
// secret's value, every relative link and anchor resolves, every test
// they name is declared.
func TestDocs(t *testing.T) {
	c, root := checker(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var parsed []*docs.Doc
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, docs.Parse(filepath.ToSlash(rel), src))
	}
	for _, p := range c.Check(parsed) {
		t.Error(p)
	}
}

// TestInboxctlExamples checks the examples inboxctl's --help prints.
func TestInboxctlExamples(t *testing.T) {
	c, _ := checker(t)
	for _, p := range c.CheckExamples() {
		t.Error(p)
	}
}

// TestReadmeIsShort holds the README to what a newcomer reads in five
// minutes: everything else belongs in docs/.
func TestReadmeIsShort(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const most = 200
	if n := bytes.Count(src, []byte("\n")); n > most {
		t.Errorf("README.md has %d lines, want at most %d: move the detail into docs/", n, most)
	}
}
