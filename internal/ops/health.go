package ops

import (
	"context"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// Health is a window's picture of a stack: the events table's counts by
// status and hour and its received→processed percentiles (store.Health),
// and the dead-letter queue's depth. inboxctl status and the console's
// health page show it.
type Health struct {
	store.Health
	// DLQDepth is SQS's ApproximateNumberOfMessages of the dead-letter
	// queue: every dead-lettered message, whatever the window.
	DLQDepth int
}

// Health reads provider's events received between since and until and the
// dead-letter queue's depth. It never scans the table (store.Events.Health
// says what it reads) and makes one SQS call.
func (s *Stack) Health(ctx context.Context, provider string, since, until time.Time) (Health, error) {
	h, err := s.Events.Health(ctx, provider, since, until)
	if err != nil {
		return Health{}, s.explain(s.Events.Table, err)
	}
	depth, err := s.approxMessages(ctx, s.DLQ)
	if err != nil {
		return Health{}, s.explain("", err)
	}
	return Health{Health: h, DLQDepth: depth}, nil
}

// DLQDepth is SQS's ApproximateNumberOfMessages of the dead-letter queue:
// one GetQueueAttributes call, cheap enough for every page of the console.
func (s *Stack) DLQDepth(ctx context.Context) (int, error) {
	n, err := s.approxMessages(ctx, s.DLQ)
	if err != nil {
		return 0, s.explain("", err)
	}
	return n, nil
}
