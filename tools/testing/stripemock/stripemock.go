// Package stripemock runs Stripe's own API mock, stripe-mock (the pinned
// binary `make stripe-mock` installs in .bin/), for tests that check the
// shape of the requests the inbox sends Stripe: stripe-mock validates
// each request's path, method and parameters against Stripe's OpenAPI
// specification and refuses with 400 what Stripe would refuse. It serves
// fixtures, ignores filters and cursors and knows no API v2 path, so the
// behaviour of a listing is tested against tools/testing/stripefake instead; this
// package answers only "would Stripe accept this request?".
package stripemock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
)

var (
	installOnce sync.Once
	binPath     string
	installErr  error
)

// Start runs stripe-mock on 127.0.0.1, on ports the system chooses, for
// the rest of t and returns its base URL. It installs the binary with
// `make stripe-mock` when .bin/ does not have it yet.
func Start(t testing.TB) string {
	t.Helper()
	needs.StripeMock(t)
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	url, err := run(t, bin)
	if err != nil {
		t.Fatalf("stripe-mock: %v", err)
	}
	return url
}

func binary() (string, error) {
	installOnce.Do(func() {
		dir, err := repo.Root()
		if err != nil {
			installErr = err
			return
		}
		binPath = filepath.Join(dir, ".bin", "stripe-mock")
		if _, err := os.Stat(binPath); err == nil {
			return
		}
		cmd := exec.Command("make", "-s", "--no-print-directory", "stripe-mock")
		cmd.Dir = dir
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = fmt.Errorf("make stripe-mock: %v\n%s", err, out)
		}
	})
	return binPath, installErr
}

// run starts bin and returns the HTTP address it says it listens at.
func run(t testing.TB, bin string) (string, error) {
	t.Helper()
	// Empty ports: the system chooses, so parallel tests never collide;
	// HTTPS too, which would otherwise take 12112 on every interface.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", err
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if addr, ok := strings.CutPrefix(line, "Listening for HTTP at address: "); ok {
				found <- "http://" + addr
			}
		}
		close(found)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case url, ok := <-found:
		if !ok {
			return "", errors.New("exited without serving")
		}
		return url, nil
	case <-time.After(30 * time.Second):
		return "", errors.New("said no address within 30 s")
	}
}
