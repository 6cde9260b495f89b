// Package devconsole serves the operator console (inboxctl console) for a
// local stack: make dev starts it beside the stack (tools/cmd/devstack),
// and the browser test starts it the same way. It is its own package
// because internal/cli's tests use package devstack, which therefore
// cannot use internal/cli.
package devconsole

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/cli"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
)

// Console is a running console.
type Console struct {
	// URL opens the console; it carries the run's token.
	URL    string
	cancel context.CancelFunc
	done   chan error
}

// Start serves the console for stack s, provisioned under prefix, on the
// loopback address addr (port
// 0 picks a free one), with the stack's own tables and queue named
// explicitly, so that no EVENTS_TABLE or QUEUE_URL left in the shell
// points it elsewhere; the AWS endpoints are the environment's, as for
// the stack itself. Its log goes to logw.
func Start(s *devstack.Stack, prefix, addr string, logw io.Writer) (*Console, error) {
	env := s.FunctionEnv[devstack.ProcessorID]
	args := []string{"--prefix", prefix, "--events-table", env["EVENTS_TABLE"], "--mirror-table", env["MIRROR_TABLE"], "--queue-url", env["QUEUE_URL"]}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Console{cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		c.done <- cli.ServeConsole(ctx, args, addr, os.Getenv, logw, func(u string) { ready <- u })
	}()
	select {
	case c.URL = <-ready:
		return c, nil
	case err := <-c.done:
		cancel()
		return nil, fmt.Errorf("devconsole: %w", err)
	case <-time.After(30 * time.Second):
		cancel()
		return nil, errors.New("devconsole: the console did not start within 30 s")
	}
}

// Close stops the console.
func (c *Console) Close() {
	c.cancel()
	<-c.done
}
