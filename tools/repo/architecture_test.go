package repo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// TestArchitectureDrawsTheTree holds docs/architecture.md to the tree:
// each top-level folder has its paragraph (a bold **`folder/`**), and
// every package folder under shared/ is drawn in its tree.
func TestArchitectureDrawsTheTree(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	out, err := exec.Command("git", "-C", root, "ls-tree", "-d", "--name-only", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	folders := strings.Fields(string(out))
	if len(folders) < 8 {
		t.Fatalf("git ls-tree: %d top-level folders, want every one (more than 8)", len(folders))
	}
	for _, f := range folders {
		if !strings.Contains(text, "**`"+f+"/`**") {
			t.Errorf("docs/architecture.md has no paragraph for %s/ (a bold **`%s/`** opening it)", f, f)
		}
	}
	start := strings.Index(text, "```\n")
	end := strings.Index(text[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/architecture.md draws no tree (a fenced block)")
	}
	tree := text[start : start+4+end]
	shared, err := os.ReadDir(filepath.Join(root, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range shared {
		if !group.IsDir() {
			continue
		}
		if !strings.Contains(tree, "  "+group.Name()+"/") {
			t.Errorf("docs/architecture.md's tree does not draw shared/%s/", group.Name())
		}
		pkgs, err := os.ReadDir(filepath.Join(root, "shared", group.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			if p.IsDir() && p.Name() != "testdata" && !strings.HasSuffix(p.Name(), "boot") && !strings.Contains(tree, " "+p.Name()+"/") {
				t.Errorf("docs/architecture.md's tree does not draw shared/%s/%s/", group.Name(), p.Name())
			}
		}
	}
}
