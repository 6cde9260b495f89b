package emulator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
)

// fakeProject makes a project root whose .venv-localstack/bin/python is
// script, and makes it the working directory.
func fakeProject(t *testing.T, script string) string {
	t.Helper()
	// The stand-in is a shell script: nothing the fast path refuses.
	refuseShort = func() bool { return false }
	t.Cleanup(func() { refuseShort = needs.Short })
	root := t.TempDir()
	for _, f := range []string{"template.yaml", "go.mod"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if script != "" {
		bin := filepath.Join(root, LocalStackVenv, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "python"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	return root
}

func TestStartLocalStackSaysWhatIsMissing(t *testing.T) {
	fakeProject(t, "")
	_, err := StartLocalStack(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "make localstack-venv") {
		t.Fatalf("got %v, want an error saying to run make localstack-venv", err)
	}
}

func TestStartLocalStackFailsLoudlyWhenItExits(t *testing.T) {
	fakeProject(t, "#!/bin/sh\necho 'ERROR: No component plugins found' >&2\nexit 1\n")
	_, err := StartLocalStack(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "exited during start") || !strings.Contains(err.Error(), "No component plugins found") {
		t.Fatalf("got %v, want the exit and LocalStack's own output", err)
	}
}

// TestLocalStackStopsAfterAGracePeriod: a LocalStack that ignores SIGTERM
// (as it can while a service starts) and has started a child is killed,
// children and all, once the grace period is over. The stand-in answers
// LocalStack's health check on GATEWAY_LISTEN, as LocalStack does.
func TestLocalStackStopsAfterAGracePeriod(t *testing.T) {
	needs.Python(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	fakeProject(t, `#!/bin/sh
trap '' TERM
sleep 300 &
echo $! > `+pidFile+`
exec `+python+` -c '
import http.server, json, os
host, port = os.environ["GATEWAY_LISTEN"].split(":")
assert os.environ["OVERRIDE_IN_DOCKER"] == "0" and os.environ["SERVICES"].startswith("sqs,ssm")
body = json.dumps({"services": {s: "running" for s in "`+localStackReady+`".split(",")}, "version": "fake"}).encode()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer((host, int(port)), H).serve_forever()
'
`)
	old := stopGrace
	stopGrace = 500 * time.Millisecond
	t.Cleanup(func() { stopGrace = old })
	ls, err := StartLocalStack(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if kind, err := Identify(context.Background(), ls.URL); err != nil || kind != "localstack" {
		t.Errorf("Identify: got %q, %v", kind, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &child); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ls.Stop()
	if d := time.Since(start); d < stopGrace || d > stopGrace+3*time.Second {
		t.Errorf("stopped in %s, want just after the grace period (%s)", d, stopGrace)
	}
	select {
	case <-ls.done:
	default:
		t.Error("LocalStack still runs after Stop")
	}
	// The child, in LocalStack's process group, is gone too (a zombie
	// until init reaps it at most: signal 0 may still find it briefly).
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil && !isZombie(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of LocalStack survived Stop", child)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(ls.root); !os.IsNotExist(err) {
		t.Errorf("FILESYSTEM_ROOT %s left behind: %v", ls.root, err)
	}
}

// isZombie reports whether process pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) state ...
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// TestStartRefusesUnderShort: under go test -short neither emulator
// starts, so a test that needs one and does not say so (needs.Emulator)
// fails the fast path instead of quietly needing Python.
func TestStartRefusesUnderShort(t *testing.T) {
	refuseShort = func() bool { return true }
	t.Cleanup(func() { refuseShort = needs.Short })
	if _, err := Start(context.Background(), Options{}); !errors.Is(err, ErrShort) {
		t.Errorf("Start: got %v, want ErrShort", err)
	}
	if _, err := StartLocalStack(context.Background(), Options{}); !errors.Is(err, ErrShort) {
		t.Errorf("StartLocalStack: got %v, want ErrShort", err)
	}
}
