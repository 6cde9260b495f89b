package repo_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

const module = "github.com/webhook-inbox/webhook-inbox"

// goList runs `go list -json` on patterns at the repository's root and
// returns each package's import path, name and non-test dependencies
// (every package it links, directly or not).
func goList(t *testing.T, patterns ...string) []listed {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Name,Deps"}, patterns...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(patterns, " "), err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s: no packages", strings.Join(patterns, " "))
	}
	return pkgs
}

type listed struct {
	ImportPath string
	Name       string
	Deps       []string
}

// TestShippedCodeLinksNoTools holds the direction of the tree's one arrow:
// tools/ is what runs only on a developer's machine or in CI (the local
// stack, the emulators, fakes, the meters), so nothing that ships, the
// functions (functions/, shared/) and the commands beside them (cmd/,
// internal/), links a package of it, directly or through another. Their
// tests may use tools/ (the emulator, the fakes): a test is not linked
// into what ships, and `go list` without -test reports no test imports.
func TestShippedCodeLinksNoTools(t *testing.T) {
	pkgs := goList(t, "./cmd/...", "./internal/...", "./shared/...", "./functions/...")
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, module+"/tools/") {
			t.Fatalf("go list of the shipped trees returned %s", p.ImportPath)
		}
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/tools/") {
				t.Errorf("%s links %s: what ships never links local tooling; move what it needs to internal/ (or a package with no dependencies)",
					strings.TrimPrefix(p.ImportPath, module+"/"), strings.TrimPrefix(dep, module+"/"))
			}
		}
	}
	if len(pkgs) < 20 {
		t.Errorf("go list of the shipped trees: got %d packages, want every package of cmd/, internal/, shared/ and functions/", len(pkgs))
	}
}

// TestToolCommandsLiveInToolsCmd: every command of tools/ is a directory
// of tools/cmd/, so a reader finds each tool's main in one place and a
// tool's package never doubles as a command; cmd/ holds only what ships.
func TestToolCommandsLiveInToolsCmd(t *testing.T) {
	for _, p := range goList(t, "./tools/...") {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if p.Name == "main" && path.Dir(rel) != "tools/cmd" {
			t.Errorf("%s is a command outside tools/cmd/: move it to tools/cmd/%s", rel, path.Base(rel))
		}
		if p.Name != "main" && strings.HasPrefix(rel, "tools/cmd/") {
			t.Errorf("%s is package %s under tools/cmd/, which holds commands only", rel, p.Name)
		}
	}
	for _, p := range goList(t, "./cmd/...") {
		if p.Name != "main" {
			t.Errorf("%s is package %s: cmd/ holds the shipped commands' mains only; their code lives in internal/", p.ImportPath, p.Name)
		}
	}
}
