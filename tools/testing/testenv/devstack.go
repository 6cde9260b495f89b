package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// DevstackBinary builds tools/cmd/devstack once per test binary.
func DevstackBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := repo.Root()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "devstack-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "devstack")
		cmd := exec.Command("go", "build", "-race", "-o", binPath, "./tools/cmd/devstack")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build devstack: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// DevstackOptions configure StartDevstack.
type DevstackOptions struct {
	// Endpoints are the AWS emulators'; Endpoints(t) when unset. The
	// stack's process reaches exactly these, whatever the test's own
	// environment says.
	Endpoints emulator.Endpoints
	// Prefix names the resources; unique to the test when empty.
	Prefix string
	// Overrides are template parameter overrides.
	Overrides map[string]string
	// Env is added to the process environment.
	Env map[string]string
	// Args are more devstack flags, like -reconcile-every 1s.
	Args []string
}

// Devstack is a local stack running as its own process (bin/devstack, as
// make dev runs it).
type Devstack struct {
	URL    string
	Prefix string
	Opts   DevstackOptions
	cmd    *exec.Cmd
	done   chan struct{}
	mu     sync.Mutex
	lines  []map[string]any
	raw    strings.Builder
}

// StartDevstack starts the local stack and waits for /healthz.
func StartDevstack(t testing.TB, opts DevstackOptions) *Devstack {
	t.Helper()
	if !opts.Endpoints.Set() {
		opts.Endpoints = Endpoints(t)
	}
	if opts.Prefix == "" {
		opts.Prefix = Prefix(t)
	}
	d := &Devstack{Prefix: opts.Prefix, Opts: opts}
	d.start(t)
	t.Cleanup(d.Stop)
	return d
}

func (d *Devstack) start(t testing.TB) {
	t.Helper()
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var overrides []string
	for k, v := range d.Opts.Overrides {
		overrides = append(overrides, k+"="+v)
	}
	sort.Strings(overrides)
	// The console on a port of its own: tests run several stacks at once.
	args := append([]string{"-addr", fmt.Sprintf("127.0.0.1:%d", port), "-prefix", d.Prefix, "-console-addr", "127.0.0.1:0",
		"-parameter-overrides", strings.Join(overrides, " ")}, d.Opts.Args...)
	cmd := exec.Command(DevstackBinary(t), args...)
	root, _ := repo.Root()
	cmd.Dir = root
	cmd.Env = append(d.Opts.Endpoints.Environ(os.Environ()), "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "LOG_LEVEL=DEBUG")
	for k, v := range d.Opts.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd = cmd
	d.done = make(chan struct{})
	d.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	go d.collect(stdout)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(d.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-d.done:
			t.Fatalf("devstack exited during start:\n%s", d.Output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("devstack not healthy after 90s:\n%s", d.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *Devstack) collect(r io.Reader) {
	defer close(d.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		d.mu.Lock()
		d.raw.WriteString(line + "\n")
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			d.lines = append(d.lines, m)
		}
		d.mu.Unlock()
	}
}

// Restart starts the stack again on the same resources, after Kill or Stop.
func (d *Devstack) Restart(t testing.TB) {
	t.Helper()
	d.start(t)
}

// Kill ends the stack with SIGKILL, as a crash would.
func (d *Devstack) Kill() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
	_ = d.cmd.Wait()
}

// Stop ends the stack with SIGINT, as Ctrl-C does.
func (d *Devstack) Stop() {
	if d.cmd == nil || d.cmd.Process == nil || d.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
	_ = d.cmd.Wait()
}

// Lines returns the JSON log lines so far whose fields match every pair of
// match.
func (d *Devstack) Lines(match map[string]string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []map[string]any
	for _, l := range d.lines {
		ok := true
		for k, v := range match {
			if fmt.Sprint(l[k]) != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// Output is everything the stack printed.
func (d *Devstack) Output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.raw.String()
}

// Eventually polls cond until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
