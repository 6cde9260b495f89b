// Package emulator starts and stops the local AWS emulators, moto in server
// mode (through tools/emulator/motoserver.py) and LocalStack without Docker (from
// .venv-localstack), for the local stack and the tests, and says where
// each service's requests go (Endpoints).
//
// When AWS_ENDPOINT_URL is set, nothing is started: that endpoint (LocalStack,
// or an emulator shared by a whole test run) is used as it is, with the
// services' own endpoints (AWS_ENDPOINT_URL_<SERVICE>) beside it.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
)

// DefaultPort is LocalStack's port, so one endpoint setting serves both.
const DefaultPort = 4566

// Emulator is a running emulator, or external endpoints.
type Emulator struct {
	// URL is the endpoint of every service without its own, like
	// http://127.0.0.1:4566.
	URL string
	// Endpoints are URL and the services' own endpoints.
	Endpoints Endpoints
	cmd       *exec.Cmd
	// done is closed when the process has exited.
	done chan struct{}
}

// Options configure Start.
type Options struct {
	// Port to bind on 127.0.0.1; 0 picks a free one.
	Port int
	// Log receives the emulator's output; nil discards it.
	Log io.Writer
}

// FromEnv returns the emulators of the environment's endpoints when
// AWS_ENDPOINT_URL is set, or starts moto for every service without an
// endpoint of its own (AWS_ENDPOINT_URL_<SERVICE>, which it keeps). It
// waits until every endpoint answers.
func FromEnv(ctx context.Context, opts Options) (*Emulator, error) {
	env := EndpointsFromEnv()
	for _, url := range env.Distinct() {
		if err := WaitReady(ctx, url, 30*time.Second); err != nil {
			return nil, fmt.Errorf("emulator: %s: %w", env, err)
		}
	}
	if env.URL != "" {
		return &Emulator{URL: env.URL, Endpoints: env}, nil
	}
	e, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	e.Endpoints.Services = env.Services
	return e, nil
}

// ErrShort: a test binary run with -short asked for an emulator. The fast
// path (go test -short) runs only the tests that need none; a test that
// needs one says so with needs.Emulator, which skips it there.
var ErrShort = errors.New("emulator: go test -short runs only tests that need no emulator: " +
	"this one starts one without saying so (call needs.Emulator, or testenv, which does)")

// refuseShort is Start's and StartLocalStack's check of -short; the
// package's own tests turn it off for their stand-ins, which are shell
// scripts.
var refuseShort = needs.Short

// Start launches moto from the project's virtualenv and waits until it
// answers. In a test binary run with -short it refuses (ErrShort).
func Start(ctx context.Context, opts Options) (*Emulator, error) {
	if refuseShort() {
		return nil, ErrShort
	}
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	python := filepath.Join(root, ".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("emulator: %s not found: run `make venv` (make dev and make test do it for you)", python)
	}
	port := opts.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(python, filepath.Join(root, "tools", "emulator", "motoserver.py"), "--port", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	if opts.Log == nil {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	}
	// Its own process group, so Stop reaches anything it spawns; and killed
	// with us, so not even a SIGKILL of the parent leaves it behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("emulator: start: %w", err)
	}
	e := &Emulator{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan struct{})}
	e.Endpoints = One(e.URL)
	go func() { _ = cmd.Wait(); close(e.done) }()
	ready := make(chan error, 1)
	go func() { ready <- WaitReady(ctx, e.URL, 60*time.Second) }()
	select {
	case err := <-ready:
		if err != nil {
			e.Stop()
			return nil, fmt.Errorf("emulator: not ready: %w", err)
		}
	case <-e.done:
		return nil, fmt.Errorf("emulator: exited during start (port %d in use?)", port)
	}
	return e, nil
}

// Started reports whether this Emulator owns a process.
func (e *Emulator) Started() bool { return e.cmd != nil }

// PID is the emulator's process id, or 0 for an external endpoint.
func (e *Emulator) PID() int {
	if e.cmd == nil || e.cmd.Process == nil {
		return 0
	}
	return e.cmd.Process.Pid
}

// Stop terminates an emulator this package started (its whole process
// group), waiting for it to exit. It does nothing for an external endpoint.
func (e *Emulator) Stop() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	pgid := e.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-e.done
	}
}

// Kill stops the emulator abruptly, as a crash would.
func (e *Emulator) Kill() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.done
}

// WaitReady polls url until the emulator answers or timeout passes.
func WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/moto-api/", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			// moto answers 200; LocalStack answers its own page or 404, and
			// either way it is up.
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Config returns an AWS configuration for the emulators at e, each service
// at its own endpoint, with the functions' HTTP client and the test
// credentials an emulator accepts. Every configuration shares one loaded
// base (loadBase), and so one HTTP client.
func Config(ctx context.Context, e Endpoints) (aws.Config, error) {
	base, err := loadBase()
	if err != nil {
		return aws.Config{}, err
	}
	cfg := base.Copy()
	// A copy shares the base's slices: clipped, an append to one copy's
	// options allocates its own, never writing into another's.
	cfg.APIOptions, cfg.ServiceOptions = slices.Clip(cfg.APIOptions), slices.Clip(cfg.ServiceOptions)
	// Whatever the process environment says: e is the whole truth.
	services := map[string]string{}
	for _, s := range knownServices {
		services[s] = e.For(s)
	}
	awsconfig.SetEndpoints(&cfg, e.URL, services)
	return cfg, nil
}

// loadBase loads the configuration every Config copies, once: loading
// parses the machine's CA bundle (AWS_CA_BUNDLE) whole, 4 ms each time
// (29 ms under -race), and the failure-point enumeration asks for five
// configurations a case. Nothing it reads from the environment is one the
// emulator's configurations vary by (their endpoints and credentials are
// set apart), and the HTTP client it holds is made to be shared.
var loadBase = sync.OnceValues(func() (aws.Config, error) {
	return awsconfig.Load(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "emulator"}, nil
		})))
})

// knownServices are the services the project calls, by the suffix of
// their endpoint variable.
var knownServices = []string{"DYNAMODB", "SQS", "SSM", "CLOUDFORMATION", "STS"}
