package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// LocalStack's open-source runtime, run on this machine without Docker
// (make test-localstack). dev/localstack.lock pins it and every
// dependency; docs/localstack.md says what runs where.
const (
	// LocalStackVenv is its virtualenv, in the project's root.
	LocalStackVenv = ".venv-localstack"
	// LocalStackServices are the services it starts: what the project
	// uses of it (SQS, SSM, CloudFormation, EventBridge for Stripe's
	// EventBridge destination) and what they lean on. DynamoDB is not
	// among them: LocalStack serves it with DynamoDB Local, a Java program
	// it downloads at first use and which is not open source; moto serves
	// it instead.
	LocalStackServices = "sqs,ssm,sts,iam,s3,cloudformation,logs,events"
	// localStackReady are the services it must run before it is ready:
	// those the project sends it. EventBridge reports "error" without the
	// crontab package (dev/localstack.in).
	localStackReady = "sqs,ssm,cloudformation,events"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL:
// LocalStack can hang on SIGTERM while a service is still starting.
var stopGrace = 10 * time.Second

// LocalStack is LocalStack running as a process group of its own.
type LocalStack struct {
	// URL is its endpoint, like http://127.0.0.1:40123.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
	root string // its FILESYSTEM_ROOT, removed by Stop
	log  *tail
	once sync.Once
}

// StartLocalStack launches LocalStack from .venv-localstack on a free
// loopback port (or opts.Port) and waits until SQS, SSM, CloudFormation
// and EventBridge run. It fails, and says why, when LocalStack is not
// installed or does not come up: nothing is skipped for want of it. In a
// test binary run with -short it refuses (ErrShort).
func StartLocalStack(ctx context.Context, opts Options) (*LocalStack, error) {
	if refuseShort() {
		return nil, ErrShort
	}
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	python := filepath.Join(root, LocalStackVenv, "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("localstack: %s not found: run `make localstack-venv` (make test-localstack does it for you)", python)
	}
	port := opts.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "localstack-")
	if err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(python, "-m", "localstack.runtime.main")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GATEWAY_LISTEN="+addr,
		"LOCALSTACK_HOST="+addr,
		"SERVICES="+LocalStackServices,
		// Started at once, so the first request of a test does not wait
		// for a service to load, and a stop never meets one loading.
		"EAGER_SERVICE_LOADING=1",
		// The machine looks like a container (it has the marker file):
		// without this LocalStack writes into its container folders and
		// ignores FILESYSTEM_ROOT.
		"OVERRIDE_IN_DOCKER=0",
		"FILESYSTEM_ROOT="+dir,
		"DNS_ADDRESS=0",
		"SKIP_SSL_CERT_DOWNLOAD=1",
		"PERSISTENCE=0",
		"DISABLE_EVENTS=1",
		// Queue URLs like moto's and AWS's path (http://host:port/account/name):
		// the default puts sqs.<region>. before 127.0.0.1, a host that
		// does not resolve.
		"SQS_ENDPOINT_STRATEGY=off",
	)
	ls := &LocalStack{URL: "http://" + addr, cmd: cmd, done: make(chan struct{}), root: dir, log: &tail{max: 64 << 10}}
	var out io.Writer = ls.log
	if opts.Log != nil {
		out = io.MultiWriter(ls.log, opts.Log)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so Stop reaches every process it starts; and
	// killed with us, so not even a SIGKILL of the parent leaves it behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A process that left the group yet holds its output open must not
	// keep Stop waiting.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("localstack: start: %w", err)
	}
	go func() { _ = cmd.Wait(); close(ls.done) }()
	ready := make(chan error, 1)
	go func() { ready <- ls.waitReady(ctx, 120*time.Second) }()
	select {
	case err := <-ready:
		if err != nil {
			ls.Stop()
			return nil, fmt.Errorf("localstack: not ready on %s: %w\n%s", ls.URL, err, ls.log)
		}
	case <-ls.done:
		ls.Stop()
		return nil, fmt.Errorf("localstack: exited during start (port %d in use?):\n%s", port, ls.log)
	}
	return ls, nil
}

// waitReady polls LocalStack's health until the services the tests use run.
func (ls *LocalStack) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		last = checkHealth(ctx, client, ls.URL)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func checkHealth(ctx context.Context, client *http.Client, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/_localstack/health", nil)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var health struct {
		Services map[string]string `json:"services"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&health); err != nil {
		return fmt.Errorf("health: %w", err)
	}
	for _, s := range strings.Split(localStackReady, ",") {
		if st := health.Services[s]; st != "running" {
			return fmt.Errorf("%s is %q", s, st)
		}
	}
	return nil
}

// PID is LocalStack's process id.
func (ls *LocalStack) PID() int { return ls.cmd.Process.Pid }

// Log returns the end of LocalStack's output.
func (ls *LocalStack) Log() string { return ls.log.String() }

// Stop ends LocalStack's process group: SIGTERM, then SIGKILL if it has not
// exited after a grace period. It removes LocalStack's files.
func (ls *LocalStack) Stop() {
	ls.once.Do(func() {
		pgid := ls.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-ls.done:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-ls.done
		}
		// Children that outlived their leader.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		os.RemoveAll(ls.root)
	})
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
