// Command inboxctl inspects, replays and repairs webhook-inbox events. See
// internal/cli and docs/cli.md.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/webhook-inbox/webhook-inbox/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
