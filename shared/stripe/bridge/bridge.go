package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/metrics"
)

// PartnerSourcePrefix begins the name of every partner event source Stripe
// creates (aws.partner/stripe.com/ed_...): the rule's source pattern.
const PartnerSourcePrefix = "aws.partner/stripe.com"

// DeadLetters sends a rejected message to the ingress dead-letter queue;
// *sqs.Client implements it.
type DeadLetters interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Message attributes a rejected message carries in the dead-letter queue,
// beside its unchanged body.
const (
	AttrOutcome = "bridge_outcome"
	AttrError   = "bridge_error"
)

// Config configures a Handler. Every field but Logger, Now and APIVersion
// is required.
type Config struct {
	// Ingester is the pipeline's one way in, with the deployment's
	// allowlist.
	Ingester *ingest.Ingester
	// Source is the partner event source the event bus is associated with;
	// an event from any other source is rejected.
	Source string
	// Account is this deployment's AWS account id; an event naming another
	// account is rejected.
	Account string
	// Livemode is the mode this deployment serves (STRIPE_MODE).
	Livemode bool
	// APIVersion is the Stripe API version the code is built for; snapshot
	// events of another version are accepted and counted.
	APIVersion string
	// DeadLetters and DeadLetterURL are the ingress dead-letter queue.
	DeadLetters   DeadLetters
	DeadLetterURL string
	Logger        *slog.Logger
	Now           func() time.Time
}

// Handler is the bridge function's Lambda handler.
type Handler struct{ cfg Config }

// New returns a Handler, or an error naming each required field not set.
func New(cfg Config) (*Handler, error) {
	var missing []error
	if cfg.Ingester == nil {
		missing = append(missing, errors.New("no ingester"))
	}
	if cfg.Source == "" {
		missing = append(missing, errors.New("no partner event source"))
	}
	if cfg.Account == "" {
		missing = append(missing, errors.New("no account"))
	}
	if cfg.DeadLetters == nil || cfg.DeadLetterURL == "" {
		missing = append(missing, errors.New("no dead-letter queue"))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("bridge: %w", errors.Join(missing...))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}, nil
}

// answerReserve is kept back from the invocation's deadline: the AWS calls
// stop this much earlier, so every message still gets its outcome, its log
// line and its place in the answer (a function killed at its deadline
// answers nothing, and the whole batch comes back).
const answerReserve = 500 * time.Millisecond

// Handle ingests one batch and reports the messages SQS must deliver again.
// It never fails the invocation.
func (h *Handler) Handle(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-answerReserve))
		defer cancel()
	}
	retry := make([]bool, len(batch.Records))
	var wg sync.WaitGroup
	for i := range batch.Records {
		wg.Add(1)
		// A batch is at most 10 messages: each its own goroutine, so one
		// slow write delays no other.
		go func() {
			defer wg.Done()
			retry[i] = h.message(ctx, batch.Records[i])
		}()
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, r := range retry {
		if r {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: batch.Records[i].MessageId})
		}
	}
	return resp, nil
}

// Why a message is rejected, for its log line and its dead-letter
// attributes. Values read from the message are quoted short (a prefix),
// so no payload reaches a log.
var (
	errNotEventBridge = errors.New("bridge: the message is not an EventBridge event")
	errWrongSource    = errors.New("bridge: the event's source is not the configured partner event source")
	errWrongAccount   = errors.New("bridge: the event's account is not this deployment's")
	errWrongMode      = errors.New("bridge: event livemode does not match this deployment's mode")
)

// result is what one message produced.
type result struct {
	outcome outcome.Outcome
	err     error
	env     event.Envelope
	ing     ingest.Result
	// stage names the call a failure to ingest failed at.
	stage string
	// moved: a rejected message is in the dead-letter queue; moveErr: it
	// could not be moved there, and is retried.
	moved   bool
	moveErr error
}

// message handles one message and reports whether SQS must deliver it
// again.
func (h *Handler) message(ctx context.Context, m events.SQSMessage) (retry bool) {
	start := h.cfg.Now()
	defer func() {
		// The last net: a panic retries this message alone, logged.
		if v := recover(); v != nil {
			h.cfg.Logger.ErrorContext(ctx, "eventbridge event: ingesting panicked; the message will be retried",
				slog.String("message_id", m.MessageId), slog.String("panic", fmt.Sprint(v)))
			retry = true
		}
	}()
	r := h.ingest(ctx, m)
	switch {
	case isRejected(r.outcome):
		r.moveErr = h.deadLetter(ctx, m, r)
		r.moved = r.moveErr == nil
		retry = !r.moved
	case isRetried(r.outcome):
		retry = true
	}
	h.log(ctx, m, r, h.cfg.Now().Sub(start))
	return retry
}

func (h *Handler) ingest(ctx context.Context, m events.SQSMessage) result {
	var ev events.EventBridgeEvent
	if err := json.Unmarshal([]byte(m.Body), &ev); err != nil {
		return result{outcome: outcome.RejectedMalformed, err: fmt.Errorf("%w: %w", errNotEventBridge, err)}
	}
	if ev.ID == "" || ev.Source == "" || len(ev.Detail) == 0 {
		return result{outcome: outcome.RejectedMalformed, err: fmt.Errorf("%w: no id, source or detail", errNotEventBridge)}
	}
	if ev.Source != h.cfg.Source {
		return result{outcome: outcome.RejectedWrongSource, err: fmt.Errorf("%w: %q", errWrongSource, quoteShort(ev.Source))}
	}
	if ev.AccountID != h.cfg.Account {
		return result{outcome: outcome.RejectedWrongAccount, err: fmt.Errorf("%w: %q", errWrongAccount, quoteShort(ev.AccountID))}
	}
	env, err := event.DecodeAnyEnvelope(ev.Detail)
	if err != nil {
		o := outcome.RejectedMalformed
		if errors.Is(err, event.ErrMissingID) {
			o = outcome.RejectedMissingID
		}
		return result{outcome: o, err: fmt.Errorf("bridge: detail: %w", err)}
	}
	if env.Livemode != h.cfg.Livemode {
		return result{outcome: outcome.RejectedWrongMode, env: env, err: errWrongMode}
	}
	res, err := h.cfg.Ingester.Ingest(ctx, env, []byte(ev.Detail), event.SourceEventBridge)
	if err != nil {
		r := result{outcome: outcome.PersistFailed, env: env, err: err, ing: res, stage: "persist"}
		if errors.Is(err, ingest.ErrEnqueue) {
			r.outcome, r.stage = outcome.EnqueueFailed, "enqueue"
		}
		switch {
		case fault.Throttled(err):
			r.outcome = outcome.Throttled
		case fault.Timeout(err) || ctx.Err() != nil:
			r.outcome = outcome.Timeout
		}
		return r
	}
	return result{outcome: res.Outcome, env: env, ing: res}
}

// deadLetter moves a rejected message to the dead-letter queue, with its
// body unchanged (a redrive to the ingress queue takes it through the same
// checks again) and why as attributes.
func (h *Handler) deadLetter(ctx context.Context, m events.SQSMessage, r result) error {
	_, err := h.cfg.DeadLetters.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(h.cfg.DeadLetterURL),
		MessageBody: aws.String(m.Body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			AttrOutcome: {DataType: aws.String("String"), StringValue: aws.String(string(r.outcome))},
			AttrError:   {DataType: aws.String("String"), StringValue: aws.String(truncate(r.err.Error(), maxLoggedError))},
		},
	})
	if err != nil {
		return fmt.Errorf("bridge: move message %s to the dead-letter queue: %w", m.MessageId, err)
	}
	return nil
}

func isRejected(o outcome.Outcome) bool {
	switch o {
	case outcome.RejectedMalformed, outcome.RejectedMissingID, outcome.RejectedWrongSource,
		outcome.RejectedWrongAccount, outcome.RejectedWrongMode:
		return true
	}
	return false
}

func isRetried(o outcome.Outcome) bool {
	switch o {
	case outcome.PersistFailed, outcome.EnqueueFailed, outcome.Throttled, outcome.Timeout:
		return true
	}
	return false
}

// maxLoggedError bounds the error text on a log line and a dead-letter
// attribute: errors name ids and causes, never payloads.
const maxLoggedError = 512

func (h *Handler) log(ctx context.Context, m events.SQSMessage, r result, latency time.Duration) {
	attrs := make([]slog.Attr, 0, 20)
	attrs = append(attrs, slog.String("message_id", m.MessageId), slog.Float64("latency_ms", float64(latency.Microseconds())/1000))
	if n, err := strconv.Atoi(m.Attributes["ApproximateReceiveCount"]); err == nil {
		attrs = append(attrs, slog.Int("receive_count", n))
	}
	if r.env.ID != "" {
		attrs = append(attrs, slog.String("event_id", r.env.ID), slog.String("event_type", r.env.Type))
	}
	if r.err != nil {
		attrs = append(attrs, slog.String("error", truncate(r.err.Error(), maxLoggedError)))
	}
	ms := make([]metrics.Metric, 0, 6)
	ms = append(ms, metrics.C("events", 1), metrics.Ms("latency", latency))
	switch {
	case r.moved:
		attrs = append(attrs, slog.String("moved_to", "dead-letter queue"))
	case r.moveErr != nil:
		attrs = append(attrs, slog.String("dead_letter_error", truncate(r.moveErr.Error(), maxLoggedError)))
		ms = append(ms, metrics.C("dead_letter_failures", 1))
	}
	switch r.stage {
	case "persist":
		attrs = append(attrs, slog.String("failed_at", r.stage))
		ms = append(ms, metrics.C("persist_failures", 1))
	case "enqueue":
		attrs = append(attrs, slog.String("failed_at", r.stage))
		ms = append(ms, metrics.C("enqueue_failures", 1))
	}
	if r.env.APIVersion != "" && h.cfg.APIVersion != "" && r.env.APIVersion != h.cfg.APIVersion {
		attrs = append(attrs, slog.String("api_version", r.env.APIVersion))
		ms = append(ms, metrics.C("api_version_mismatch", 1))
	}
	if r.ing.HashConflict {
		ms = append(ms, metrics.C("payload_hash_conflict", 1))
	}
	if r.ing.Record.PayloadOmitted {
		ms = append(ms, metrics.C("payload_omitted", 1))
	}
	if r.ing.AccountErr != nil {
		// The event is stored: only the reconciler's list of accounts
		// waits, for the account's next event.
		attrs = append(attrs, slog.String("account_error", truncate(r.ing.AccountErr.Error(), maxLoggedError)))
		ms = append(ms, metrics.C("account_record_failures", 1))
	}
	dims := []metrics.Dim{{Name: "function", Value: "bridge"}, {Name: "outcome", Value: string(r.outcome)}}
	attrs = append(attrs, metrics.Attrs(h.cfg.Now(), dims, ms...)...)
	level := slog.LevelInfo
	switch {
	case isRetried(r.outcome) || r.moveErr != nil:
		level = slog.LevelError
	case isRejected(r.outcome):
		level = slog.LevelWarn
	}
	h.cfg.Logger.LogAttrs(ctx, level, "eventbridge event", attrs...)
}

func quoteShort(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
