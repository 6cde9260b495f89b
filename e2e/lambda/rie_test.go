package lambda

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awsemulator "github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testenv"
)

// Logical ids of the functions in template.yaml, and the benchmark's
// baseline (a Makefile target only).
const (
	receiverID   = "ReceiverFunction"
	processorID  = "ProcessorFunction"
	reconcilerID = "ReconcilerFunction"
	helloID      = "HelloFunction"
)

var (
	buildMu  sync.Mutex
	built    = map[string]string{} // arch/id -> bootstrap
	buildDir string
	rieOnce  sync.Once
	riePath  string
	rieErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func root(t testing.TB) string {
	t.Helper()
	dir, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// makeCmd runs a target of the project's Makefile. The variables a parent
// make exports (its jobserver among them) are dropped: this make is not its
// child.
func makeCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("make", append([]string{"-s", "--no-print-directory"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "MAKEFLAGS" || k == "MFLAGS" || k == "MAKELEVEL" {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	return cmd
}

// bootstrap builds function id with the Makefile target sam build runs
// (build-<id>), for arch, once per test binary, and returns its path.
func bootstrap(t testing.TB, id, arch string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := arch + "/" + id
	if p, ok := built[key]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "lambda-bootstraps")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	dir := filepath.Join(buildDir, arch, id)
	cmd := makeCmd(root(t), "build-"+id, "ARTIFACTS_DIR="+dir, "LAMBDA_ARCH="+arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build-%s LAMBDA_ARCH=%s: %v\n%s", id, arch, err, out)
	}
	built[key] = filepath.Join(dir, "bootstrap")
	return built[key]
}

// hostBootstrap builds function id for this machine.
func hostBootstrap(t testing.TB, id string) string {
	t.Helper()
	return bootstrap(t, id, runtime.GOARCH)
}

// rieBinary returns the pinned runtime emulator, installing it with
// `make rie` when .bin/ does not have it yet.
func rieBinary(t testing.TB) string {
	t.Helper()
	rieOnce.Do(func() {
		dir, err := repo.Root()
		if err != nil {
			rieErr = err
			return
		}
		riePath = filepath.Join(dir, ".bin", "aws-lambda-rie")
		if _, err := os.Stat(riePath); err == nil {
			return
		}
		if out, err := makeCmd(dir, "rie").CombinedOutput(); err != nil {
			rieErr = fmt.Errorf("make rie: %v\n%s", err, out)
		}
	})
	if rieErr != nil {
		t.Fatal(rieErr)
	}
	return riePath
}

// emulator is one aws-lambda-rie process running one bootstrap. It inits the
// function on the first invocation, as Lambda does on a cold start.
type emulator struct {
	url  string
	cmd  *exec.Cmd
	out  *testenv.Buffer
	done chan struct{}
	// mu keeps one invocation in flight: two crash the emulator.
	mu sync.Mutex
}

// startEmulator starts bootstrap under the runtime emulator, bound to
// 127.0.0.1 (both its invoke API and the runtime API), with exactly env as
// the function's environment: nothing leaks in from the test process.
func startEmulator(rie, bootstrap string, env map[string]string) (*emulator, error) {
	runtimePort, err := awsemulator.FreePort()
	if err != nil {
		return nil, err
	}
	return startEmulatorOn(rie, bootstrap, env, runtimePort)
}

// startEmulatorOn is startEmulator with the runtime API on runtimePort.
func startEmulatorOn(rie, bootstrap string, env map[string]string, runtimePort int) (*emulator, error) {
	invokePort, err := awsemulator.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", invokePort),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", runtimePort),
		"--log-level", "error",
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cmd.Env = []string{}
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	e := &emulator{url: fmt.Sprintf("http://127.0.0.1:%d", invokePort), cmd: cmd, out: &testenv.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = e.out, e.out
	// Killed with the test binary, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", rie, err)
	}
	go func() { _ = cmd.Wait(); close(e.done) }()
	return e, nil
}

// start is startEmulator for a test; the emulator stops with the test.
func start(t testing.TB, bootstrap string, env map[string]string) *emulator {
	t.Helper()
	e, err := startEmulator(rieBinary(t), bootstrap, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e
}

// invoke sends one invocation and returns the emulator's HTTP status and
// the function's answer. It waits for the emulator to listen first.
func (e *emulator) invoke(ctx context.Context, payload []byte) (int, []byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/2015-03-31/functions/function/invocations", bytes.NewReader(payload))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return resp.StatusCode, body, err
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return 0, nil, fmt.Errorf("invoke: %w", err)
		}
		select {
		case <-e.done:
			return 0, nil, fmt.Errorf("invoke: the emulator exited:\n%s", e.out.String())
		case <-ctx.Done():
			return 0, nil, fmt.Errorf("invoke: emulator not listening: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// call invokes with a time limit and fails the test on a transport error.
func (e *emulator) call(t testing.TB, payload []byte) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	status, body, err := e.invoke(ctx, payload)
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, e.out.String())
	}
	return status, body
}

// stop kills the emulator and the runtime it started (in its own process
// group, so found through /proc as the emulator's children).
func (e *emulator) stop() {
	if e.cmd.Process == nil {
		return
	}
	children := childPIDs(e.cmd.Process.Pid)
	_ = e.cmd.Process.Kill()
	<-e.done
	for _, pid := range children {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func childPIDs(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// logLines returns the function's JSON log lines whose fields match.
func (e *emulator) logLines(match map[string]string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		ok := true
		for k, v := range match {
			if fmt.Sprint(m[k]) != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
