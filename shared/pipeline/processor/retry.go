package processor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

// MaxBackoff is the longest delay one retry may wait: SQS keeps a received
// message invisible for at most 12 hours from its receive, and the
// invocation that failed it (at most Lambda's 15 minutes) has used some.
const MaxBackoff = 12*time.Hour - 15*time.Minute

// MaxRetryBudget bounds RetryBudget: half the webhook queue's 4-day
// retention (template.yaml), so that a message is dead-lettered, where an
// operator sees it, long before SQS would delete it unseen.
const MaxRetryBudget = 48 * time.Hour

// RetryBudget is how long a failing event is retried before it is
// dead-lettered: the backoffs after each of its first receives-1 receives
// (base doubled per receive, at most max), the last receive dead-letters
// it. The time the attempts themselves take comes on top.
func RetryBudget(base, max time.Duration, receives int) time.Duration {
	var total time.Duration
	for r := 1; r < receives; r++ {
		total += backoff(base, max, r)
	}
	return total
}

// backoff is the delay before the next receive of a message that failed
// on its receives-th receive: base doubled per receive, at most max.
func backoff(base, max time.Duration, receives int) time.Duration {
	max = min(max, MaxBackoff)
	d := base
	for i := 1; i < receives && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// fail records a failed attempt and decides the message's fate.
func (p *Processor) fail(
	ctx context.Context,
	log *slog.Logger,
	m events.SQSMessage,
	rec event.Record,
	owner string,
	receives int,
	cause error,
) outcome.Outcome {
	status, result := event.StatusFailed, outcome.Failed
	switch {
	case fault.IsPermanent(cause):
		status, result = event.StatusFailedPermanent, outcome.FailedPermanent
	case receives >= p.cfg.MaxReceiveCount:
		// SQS moves the message to the DLQ instead of delivering it again:
		// mark the record first so the store and the DLQ agree.
		status, result = event.StatusDeadLettered, outcome.DeadLettered
	}
	log = log.With(slog.String("error", cause.Error()), slog.String("error_class", Class(cause)),
		slog.Int("attempts", rec.Attempts), slog.Int("receive_count", receives))
	var pe *PanicError
	if errors.As(cause, &pe) {
		log = log.With(slog.String("stack", string(pe.Stack)))
	}
	now := p.cfg.Now()
	var wait time.Duration
	var retryAt time.Time
	if result == outcome.Failed {
		wait = p.backoff(receives)
		retryAt = now.Add(wait)
	}
	if err := p.cfg.Store.Fail(ctx, rec, owner, status, cause.Error(), now, retryAt); err != nil {
		// The record stays processing under our lease, which expires; the
		// message is retried either way.
		log.ErrorContext(ctx, "recording the failure failed", slog.String("record_error", err.Error()))
		return outcome.Failed
	}
	switch result {
	case outcome.FailedPermanent:
		log.ErrorContext(ctx, "event failed permanently")
	case outcome.DeadLettered:
		log.ErrorContext(ctx, "event dead-lettered after its last allowed receive")
		// Visible again at once, the message moves to the DLQ on the next
		// receive instead of after the queue's whole visibility timeout.
		p.delay(ctx, m, 0)
	default:
		log.WarnContext(ctx, "event failed; will retry", slog.Duration("retry_in", wait))
		p.delay(ctx, m, wait)
	}
	return result
}

// backoff is the delay before the next receive of a message that failed on
// its receives-th receive: exponential in the receive count, rather than the
// queue's whole visibility timeout (which must be long, at least six times
// the function's timeout).
func (p *Processor) backoff(receives int) time.Duration {
	return backoff(p.cfg.BackoffBase, p.cfg.BackoffMax, receives)
}

// delay makes a failed message visible again after d (whole seconds).
func (p *Processor) delay(ctx context.Context, m events.SQSMessage, d time.Duration) {
	if p.cfg.Visibility == nil || p.cfg.QueueURL == "" || m.ReceiptHandle == "" {
		return
	}
	_, err := p.cfg.Visibility.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(p.cfg.QueueURL),
		ReceiptHandle:     aws.String(m.ReceiptHandle),
		VisibilityTimeout: int32(d / time.Second),
	})
	if err != nil {
		// Harmless: the message returns after the queue's own timeout.
		p.cfg.Logger.WarnContext(ctx, "could not change the message's visibility", slog.String("message_id", m.MessageId), slog.String("error", err.Error()))
	}
}

// Class names the kind of a failure for logs and operators: "permanent"
// (marked *fault.Permanent: retrying cannot help), "throttled", "timeout",
// "transient" (a dependency's 5xx or a connection error, as the AWS SDK
// classifies them), "panic" (a handler panicked: *PanicError) or "other".
// Every class but "permanent" is retried: an
// error nobody classified is assumed to be worth another try, and the DLQ
// bounds the cost of being wrong.
func Class(err error) string {
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		return "panic"
	case fault.IsPermanent(err):
		return "permanent"
	case fault.Throttled(err):
		return "throttled"
	case fault.Timeout(err):
		return "timeout"
	case fault.Retryable(err):
		return "transient"
	}
	return "other"
}

// untilSeconds is a delay of at least d, in whole seconds (SQS's unit),
// plus one: a message made visible then finds the lease ended.
func untilSeconds(d time.Duration) time.Duration {
	ceil := (max(d, 0) + time.Second - 1) / time.Second
	return (ceil + 1) * time.Second
}
