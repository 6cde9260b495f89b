package needs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// TestFastPathNeedsNoEmulatorNorPython runs the fast path as a developer
// would on a machine with Go alone: `go test -short ./...` with no
// AWS_ENDPOINT_URL and a PATH without Python, pip, moto or LocalStack. It
// passes only if every test that needs one of them says so (needs, or
// testenv, which calls it) and is skipped there, and every other test
// passes without them: a test that starts an emulator without saying so
// fails (emulator.ErrShort), and one that runs Python finds none.
//
// It is the fast path itself, so it does not run under -short.
func TestFastPathNeedsNoEmulatorNorPython(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test -short ./... itself: skipped under -short, where it would run itself")
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := noPython(t)
	args := []string{"test", "-short", "-count=1"}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, append(args, "./...")...)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + bin}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || strings.HasPrefix(k, "AWS_ENDPOINT_URL") || k == "VIRTUAL_ENV" || k == "PYENV_ROOT" {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -short ./... without an emulator or Python: %v\n%s", err, failures(out))
	}
	if n := len(regexp.MustCompile(`(?m)^ok `).FindAll(out, -1)); n < 30 {
		t.Errorf("go test -short ./...: %d packages passed, want every package with tests (more than 30)\n%s", n, out)
	}
}

// noPython returns a directory holding a link to every command on PATH
// except Python's and those that run on it, to stand for PATH.
func noPython(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	python := regexp.MustCompile(`^(python|pip|pydoc|moto|localstack|pyenv|sam$|cfn-lint|checkov)`)
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if python.MatchString(e.Name()) {
				continue
			}
			link := filepath.Join(dir, e.Name())
			if _, err := os.Lstat(link); err == nil {
				continue // the first on PATH wins, as for a shell
			}
			_ = os.Symlink(filepath.Join(d, e.Name()), link)
		}
	}
	if _, err := exec.LookPath(filepath.Join(dir, "python3")); err == nil {
		t.Fatal("python3 is still reachable")
	}
	return dir
}

// failures keeps the lines of go test's output that say what failed.
func failures(out []byte) string {
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "ok ") || strings.Contains(l, "[no test files]") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
