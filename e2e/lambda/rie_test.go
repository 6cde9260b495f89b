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
	"net"
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
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
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
	needs.LambdaRuntime(t)
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

	// What started it, to start it again on other ports when one it was
	// given was taken before it bound it (see invoke).
	rie, bootstrap string
	env            map[string]string
	runtimePort    int // fixed by the caller; 0 when chosen here
	invoked        bool
	restarts       int
}

// startEmulator starts bootstrap under the runtime emulator, bound to
// 127.0.0.1 (both its invoke API and the runtime API), with exactly env as
// the function's environment: nothing leaks in from the test process.
func startEmulator(rie, bootstrap string, env map[string]string) (*emulator, error) {
	return startEmulatorOn(rie, bootstrap, env, 0)
}

// startEmulatorOn is startEmulator with the runtime API on runtimePort (0:
// a free port).
func startEmulatorOn(rie, bootstrap string, env map[string]string, runtimePort int) (*emulator, error) {
	e := &emulator{rie: rie, bootstrap: bootstrap, env: env, runtimePort: runtimePort}
	return e, e.launch()
}

// launch starts the emulator process on free ports.
func (e *emulator) launch() error {
	runtimePort := e.runtimePort
	if runtimePort == 0 {
		p, err := awsemulator.FreePort()
		if err != nil {
			return err
		}
		runtimePort = p
	}
	invokePort, err := awsemulator.FreePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(e.rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", invokePort),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", runtimePort),
		"--log-level", "error",
		e.bootstrap)
	cmd.Dir = filepath.Dir(e.bootstrap)
	keys := make([]string, 0, len(e.env))
	for k := range e.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cmd.Env = []string{}
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+e.env[k])
	}
	e.url, e.cmd, e.out, e.done = fmt.Sprintf("http://127.0.0.1:%d", invokePort), cmd, &testenv.Buffer{}, make(chan struct{})
	cmd.Stdout, cmd.Stderr = e.out, e.out
	// Killed with the test binary, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", e.rie, err)
	}
	done := e.done
	go func() { _ = cmd.Wait(); close(done) }()
	return nil
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
			e.invoked = true
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			return resp.StatusCode, body, err
		}
		// A connection kept from an earlier invocation fails with EOF,
		// not ECONNREFUSED, when the emulator has exited since: the exit
		// is the answer then, whatever error it surfaced as.
		exited := false
		select {
		case <-e.done:
			exited = true
		default:
		}
		if !exited && !errors.Is(err, syscall.ECONNREFUSED) {
			return 0, nil, fmt.Errorf("invoke: %w", err)
		}
		select {
		case <-e.done:
			// A port chosen free was taken by another process before the
			// emulator bound it: nothing ran yet, so start it again on
			// other ports, as a new cold start.
			if !e.invoked && e.restarts < 3 && strings.Contains(e.out.String(), "address already in use") {
				e.restarts++
				if err := e.launch(); err != nil {
					return 0, nil, fmt.Errorf("invoke: restart the emulator: %w", err)
				}
				continue
			}
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

// TestATakenPortRestartsTheEmulatorBeforeItsFirstInvocation: when another
// process binds the runtime API's port between FreePort and the emulator
// (seen in CI), the first invocation starts the emulator again on other
// ports instead of failing the test that only wanted a cold start.
func TestATakenPortRestartsTheEmulatorBeforeItsFirstInvocation(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	e := &emulator{rie: rieBinary(t), bootstrap: hostBootstrap(t, helloID), env: runtimeEnv(helloID, 3, testenv.Endpoint(t)),
		runtimePort: taken.Addr().(*net.TCPAddr).Port}
	if err := e.launch(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	<-e.done
	if !strings.Contains(e.out.String(), "address already in use") {
		t.Fatalf("the emulator on a taken port: want it to exit with address already in use, got:\n%s", e.out.String())
	}
	e.runtimePort = 0 // chosen by startEmulator from now on
	status, body := e.call(t, []byte(`{}`))
	if status != http.StatusOK || e.restarts != 1 {
		t.Fatalf("after a taken port: got %d %s after %d restarts, want 200 after 1\n%s", status, body, e.restarts, e.out.String())
	}
	// Once a function ran, its exit is a failure to report, never hidden by
	// a restart.
	e.stop()
	if _, _, err := e.invoke(context.Background(), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("invoke after the function ran and stopped: got %v, want the exit reported", err)
	}
}
