// Package pause is the project's one context-aware wait: every loop that
// waits between attempts (a stuck sweep's pages, a poller's empty
// receive, an operator following an SQS move task) waits with For, so a
// cancelled context or a Lambda deadline ends the wait at once rather
// than after it. It imports nothing but the standard library: a
// function links it at no cold-start cost.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx is done, whichever comes first. It returns
// ctx.Err() when ctx ended the wait, nil otherwise. A d of zero or less
// returns at once (ctx.Err() if ctx is already done).
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
