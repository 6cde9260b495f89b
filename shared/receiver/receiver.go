// Package receiver answers webhook deliveries: it verifies each one against
// the raw body, persists and enqueues it through package ingest, and answers
// 2xx only once the event is safely in the pipeline.
//
// Every request gets exactly one JSON log line carrying its metrics (see
// package metrics). The answer to a bad request is deliberately generic: which
// check failed is in the log, never in the response.
package receiver

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/metrics"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
)

// Defaults for Config.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultBudget       = 8 * time.Second
)

// Config configures a Handler.
type Config struct {
	Verifier *signature.Verifier
	Ingester *ingest.Ingester
	// Livemode is the mode this deployment serves; events of the other mode
	// are rejected.
	Livemode bool
	// APIVersion is the provider API version the code is built for; events
	// of another version are accepted and counted.
	APIVersion   string
	MaxBodyBytes int
	// Budget bounds all AWS calls of one request, retries included, well
	// inside API Gateway's 30 s limit and the provider's own timeout.
	Budget time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// Handler is the receiver's Lambda handler.
type Handler struct{ cfg Config }

// New returns a Handler; zero fields of cfg take their defaults.
func New(cfg Config) *Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}
}

// Outcomes of a request, as logged and counted.
const (
	OutcomeStored           = "stored"
	OutcomeDuplicate        = "duplicate"
	OutcomeRequeued         = "requeued"
	OutcomeIgnored          = "ignored"
	OutcomeMissingSignature = "rejected_missing_signature"
	OutcomeBadSignature     = "rejected_signature"
	OutcomeStale            = "rejected_stale_timestamp"
	OutcomeFuture           = "rejected_future_timestamp"
	OutcomeMalformed        = "rejected_malformed"
	OutcomeMissingID        = "rejected_missing_id"
	OutcomeWrongMode        = "rejected_wrong_mode"
	OutcomeTooLarge         = "rejected_too_large"
	OutcomePersistFailed    = "persist_failed"
	OutcomeEnqueueFailed    = "enqueue_failed"
	OutcomeThrottled        = "throttled"
	OutcomeTimeout          = "timeout"
)

// result is what one request produced, for the answer and the log line.
type result struct {
	status  int
	outcome string
	env     event.Envelope
	err     error
	ing     ingest.Result
}

// Handle answers one delivery.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.cfg.Now()
	r := h.handle(ctx, req)
	h.log(ctx, req, r, h.cfg.Now().Sub(start))
	return answer(r.status), nil
}

func (h *Handler) handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) result {
	body, ok := h.body(req)
	if !ok {
		return result{status: 413, outcome: OutcomeTooLarge}
	}
	if body == nil {
		return result{status: 400, outcome: OutcomeMalformed, err: errors.New("body is not valid base64")}
	}
	if err := h.cfg.Verifier.Verify(body, req.Headers["stripe-signature"]); err != nil {
		return result{status: 400, outcome: signatureOutcome(err), err: err}
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		outcome := OutcomeMalformed
		if errors.Is(err, event.ErrMissingID) {
			outcome = OutcomeMissingID
		}
		return result{status: 400, outcome: outcome, err: err}
	}
	if env.Livemode != h.cfg.Livemode {
		return result{status: 400, outcome: OutcomeWrongMode, env: env}
	}

	ctx, cancel := context.WithTimeout(ctx, h.cfg.Budget)
	defer cancel()
	res, err := h.cfg.Ingester.Ingest(ctx, env, body, event.SourceWebhook)
	if err != nil {
		r := result{status: 500, outcome: OutcomePersistFailed, env: env, err: err, ing: res}
		if errors.Is(err, ingest.ErrEnqueue) {
			r.outcome = OutcomeEnqueueFailed
		}
		switch {
		case fault.Throttled(err):
			r.status, r.outcome = 503, OutcomeThrottled
		case fault.Timeout(err):
			r.status, r.outcome = 504, OutcomeTimeout
		}
		return r
	}
	return result{status: 200, outcome: string(res.Outcome), env: env, ing: res}
}

// body returns the raw bytes that were signed; ok is false when they exceed
// the size limit, and body is nil when a base64 body does not decode.
func (h *Handler) body(req events.APIGatewayV2HTTPRequest) (body []byte, ok bool) {
	if !req.IsBase64Encoded {
		if len(req.Body) > h.cfg.MaxBodyBytes {
			return nil, false
		}
		return []byte(req.Body), true
	}
	if base64.StdEncoding.DecodedLen(len(req.Body)) > h.cfg.MaxBodyBytes+2 {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, true
	}
	if len(b) > h.cfg.MaxBodyBytes {
		return nil, false
	}
	return b, true
}

func signatureOutcome(err error) string {
	switch {
	case errors.Is(err, signature.ErrMissingHeader):
		return OutcomeMissingSignature
	case errors.Is(err, signature.ErrTooOld):
		return OutcomeStale
	case errors.Is(err, signature.ErrTooNew):
		return OutcomeFuture
	}
	return OutcomeBadSignature
}

// Response bodies: generic on purpose.
var bodies = map[int]string{
	200: `{"received":true}`,
	400: `{"error":"invalid webhook request"}`,
	413: `{"error":"payload too large"}`,
	500: `{"error":"temporarily unable to accept the event; retry"}`,
	503: `{"error":"temporarily unable to accept the event; retry"}`,
	504: `{"error":"temporarily unable to accept the event; retry"}`,
}

func answer(status int) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"content-type": "application/json"},
		Body:       bodies[status],
	}
}

func (h *Handler) log(ctx context.Context, req events.APIGatewayV2HTTPRequest, r result, latency time.Duration) {
	attrs := []any{
		slog.String("request_id", req.RequestContext.RequestID),
		slog.Int("status_code", r.status),
		slog.Float64("latency_ms", float64(latency.Microseconds())/1000),
	}
	if r.env.ID != "" {
		attrs = append(attrs, slog.String("event_id", r.env.ID), slog.String("event_type", r.env.Type))
	}
	if r.err != nil {
		attrs = append(attrs, slog.String("error", r.err.Error()))
	}
	ms := []metrics.Metric{metrics.C("requests", 1), metrics.Ms("latency", latency)}
	if r.env.APIVersion != "" && h.cfg.APIVersion != "" && r.env.APIVersion != h.cfg.APIVersion {
		attrs = append(attrs, slog.String("api_version", r.env.APIVersion))
		ms = append(ms, metrics.C("api_version_mismatch", 1))
	}
	if r.ing.HashConflict {
		attrs = append(attrs, slog.Bool("payload_hash_conflict", true))
		ms = append(ms, metrics.C("payload_hash_conflict", 1))
	}
	if r.ing.Record.PayloadOmitted {
		attrs = append(attrs, slog.Bool("payload_omitted", true))
		ms = append(ms, metrics.C("payload_omitted", 1))
	}
	attrs = append(attrs, metrics.Attrs(h.cfg.Now(), []metrics.Dim{{Name: "function", Value: "receiver"}, {Name: "outcome", Value: r.outcome}}, ms...)...)
	level := slog.LevelInfo
	switch {
	case r.status >= 500:
		level = slog.LevelError
	case r.status >= 400:
		level = slog.LevelWarn
	}
	h.cfg.Logger.Log(ctx, level, "webhook", attrs...)
}
