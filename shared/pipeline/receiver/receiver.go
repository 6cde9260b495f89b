// Package receiver answers webhook deliveries: it verifies each one against
// the raw body, persists and enqueues it through package ingest, and answers
// 2xx only once the event is safely in the pipeline.
//
// Every request gets exactly one JSON log line carrying its metrics (see
// package metrics). The answer to a bad request is deliberately generic: which
// check failed is in the log, never in the response. The line never carries
// the signing secret, the signature header or the payload.
//
// The answers:
//
//	200  stored and enqueued; a duplicate (by the stored record's status);
//	     a type outside the allowlist, recorded as ignored
//	400  missing, malformed or non-matching signature; stale or future
//	     timestamp; a replay (a body already accepted as another event, or
//	     a Stripe header with a second timestamp); malformed JSON or
//	     base64; no event id or type; wrong mode
//	404  the path names no provider, or one with no secret configured
//	413  body over the size limit
//	500  the record could not be stored, or its pointer not enqueued
//	503  DynamoDB or SQS throttled us; the signing secrets cannot be read
//	504  the time budget (or the Lambda deadline) ran out
//
// Every provider is served the same way: its deliveries arrive at
// /webhooks/{provider} (Stripe's at /webhooks/stripe), are verified by its
// provider.Verifier, and go into the pipeline through its own ingester,
// so its records are keyed by its name and its allowlist is its own. What
// differs between providers is package provider's: what each signs, its
// envelope, Stripe's mode check. When a provider's signature does not
// cover the event's id, or covers no time (provider.Verified.ReplayKey),
// the receiver first claims the signed body for the event's id (Bodies):
// a body already claimed by another id, or claimed longer ago than
// records are kept, is a replay, answered 400 (rejected_replay) and
// stored nowhere.
//
// Every 5xx makes the provider retry, and nothing was acknowledged. Each
// request's log line names its outcome (package outcome; docs/outcomes.md
// describes each one).
package receiver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/defaults"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/metrics"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// Defaults for Config.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultBudget       = 8 * time.Second
)

// answerReserve is kept back from the invocation's own deadline (Lambda's
// timeout): a function killed at its deadline logs nothing and the provider
// sees an opaque gateway error, so the AWS calls stop this much earlier and
// the request still gets its 504 and its log line.
const answerReserve = 500 * time.Millisecond

// Config configures a Handler.
type Config struct {
	// Providers are the providers served, by name (the path's
	// {provider}; /webhooks/stripe is Stripe's): only those with a secret
	// configured. Any other name is answered 404.
	Providers    map[string]Provider
	MaxBodyBytes int
	// Budget bounds all AWS calls of one request, retries included, well
	// inside API Gateway's 30 s limit and the provider's own timeout. The
	// SDK's retries and backoff sleeps end when it does. When the request's
	// context has an earlier deadline (Lambda's), that deadline minus a
	// reserve for answering wins.
	Budget time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// Provider is one provider served.
type Provider struct {
	// Verifier verifies a delivery against the provider's secrets
	// (provider.Keyring: read on first use). An error wrapping
	// provider.ErrNoSecrets means they cannot be had: the delivery is
	// answered 503 (secrets_unavailable), and the provider retries it.
	Verifier provider.Verifier
	// Ingester stores the provider's events under its name, with its own
	// allowlist.
	Ingester *ingest.Ingester
	// Bodies claims the signed bodies of deliveries whose signature does
	// not cover the event's id (provider.Verified.ReplayKey); required for
	// a provider whose verifier sets one. *store.Events implements it.
	Bodies Bodies
	// APIVersion is the provider API version the code is built for
	// (Stripe's); events of another version are accepted and counted.
	// Empty checks nothing.
	APIVersion string
}

// Bodies remembers which event each signed body is. *store.Events
// implements it.
type Bodies interface {
	// ClaimBody records that the body provider signed, named by key (a
	// provider.Verified.ReplayKey), is event id's, unless it is another
	// event's already, and returns the event it is, and whether that
	// claim has outlived the event's record (the record's TTL has passed,
	// or is about to): the body is then a replay even under its own id.
	ClaimBody(ctx context.Context, provider, key, id string, now time.Time) (owner string, outlived bool, err error)
}

// pathParameter is the route's path parameter naming the provider.
const pathParameter = "provider"

// Handler is the receiver's Lambda handler.
type Handler struct{ cfg Config }

// New returns a Handler; zero fields of cfg take their defaults.
func New(cfg Config) *Handler {
	defaults.Set(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Set(&cfg.Budget, DefaultBudget)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}
}

// Stages at which an accepted event can fail to enter the pipeline, as
// logged (failed_at) and counted.
const (
	stageSecrets = "secrets"
	stagePersist = "persist"
	stageEnqueue = "enqueue"
)

// result is what one request produced, for the answer and the log line.
type result struct {
	status  int
	outcome outcome.Outcome
	env     event.Envelope
	err     error
	ing     ingest.Result
	// stage is where a 5xx failed: throttling and timeouts have their own
	// outcomes, and this still says which call it was.
	stage string
	// provider is the provider the request was for, when the path names
	// one.
	provider string
	// apiVersion is the event's API version when it is not the one the
	// code is built for.
	apiVersion string
	// replayOf is the event a replayed body is.
	replayOf string
}

// Handle answers one delivery.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.cfg.Now()
	r := h.handle(ctx, req)
	h.log(ctx, req, r, h.cfg.Now().Sub(start))
	return answer(r.status), nil
}

var errUnknownProvider = errors.New("receiver: no such provider, or none of its secrets configured")

func (h *Handler) handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) result {
	name := req.PathParameters[pathParameter]
	if name == "" {
		// /webhooks/stripe, Stripe's route since before there were others.
		name = provider.Stripe
	}
	p, ok := h.cfg.Providers[name]
	if !ok {
		// The name comes from the path: logged only when it is one we know.
		r := result{status: 404, outcome: outcome.RejectedUnknownProvider, err: errUnknownProvider}
		if provider.Known(name) {
			r.provider = name
		}
		return r
	}
	r := h.deliver(ctx, req, p, name)
	r.provider = name
	if p.APIVersion != "" && r.env.APIVersion != "" && r.env.APIVersion != p.APIVersion {
		r.apiVersion = r.env.APIVersion
	}
	return r
}

// deliver answers a delivery for provider p, named name.
func (h *Handler) deliver(ctx context.Context, req events.APIGatewayV2HTTPRequest, p Provider, name string) result {
	body, err := h.body(req)
	if errors.Is(err, errTooLarge) {
		return result{status: 413, outcome: outcome.RejectedTooLarge, err: err}
	}
	if err != nil {
		return result{status: 400, outcome: outcome.RejectedMalformed, err: err}
	}
	// The budget covers every AWS call of the request, the read of the
	// signing secrets (on the first request, or after a refusal) included.
	ctx, cancel := h.budget(ctx)
	defer cancel()
	v, err := p.Verifier.Verify(ctx, provider.Request{
		Body: body, Headers: req.Headers,
		Host: req.RequestContext.DomainName, Path: req.RawPath, Query: req.RawQueryString,
	})
	if err != nil {
		r := result{status: 400, outcome: provider.Outcome(err), env: v.Envelope, err: err}
		if errors.Is(err, provider.ErrNoSecrets) {
			// Nothing is wrong with the delivery: the provider retries a
			// 503, and the 5xx alarm sees it.
			r.status, r.stage = 503, stageSecrets
		}
		return r
	}
	if v.ReplayKey != "" {
		if r, replay := h.claim(ctx, p, name, v); replay {
			return r
		}
	}
	return h.ingest(ctx, p.Ingester, v.Envelope, body)
}

// claim claims v's signed body for its event (Provider.Bodies), and
// reports whether that answers the request: a body that is another
// event's already (a replay), or a claim that could not be written (the
// answer is then a 5xx, and the provider retries).
func (h *Handler) claim(ctx context.Context, p Provider, name string, v provider.Verified) (result, bool) {
	if p.Bodies == nil {
		return result{status: 500, outcome: outcome.PersistFailed, env: v.Envelope, stage: stagePersist, err: errNoBodies}, true
	}
	owner, outlived, err := p.Bodies.ClaimBody(ctx, name, v.ReplayKey, v.Envelope.ID, h.cfg.Now())
	if err != nil {
		return failed(ctx, result{status: 500, outcome: outcome.PersistFailed, env: v.Envelope, err: err, stage: stagePersist}), true
	}
	switch {
	case owner != v.Envelope.ID:
		err := fmt.Errorf("%w: its signed body is event %s's", provider.ErrReplay, owner)
		return result{status: 400, outcome: outcome.RejectedReplay, env: v.Envelope, err: err, replayOf: owner}, true
	case outlived:
		// The event's record is gone with its TTL: ingested again, the
		// capture would be a new event. No sender retries that long.
		err := fmt.Errorf("%w: its signed body is event %s's, received longer ago than records are kept", provider.ErrReplay, owner)
		return result{status: 400, outcome: outcome.RejectedReplay, env: v.Envelope, err: err, replayOf: owner}, true
	}
	return result{}, false
}

var errNoBodies = errors.New("receiver: the provider's signature does not cover its ids, and no store of bodies is configured")

// ingest puts a verified event into the pipeline through in, and answers
// for what happened. ctx carries the request's budget.
func (h *Handler) ingest(ctx context.Context, in *ingest.Ingester, env event.Envelope, body []byte) result {
	res, err := in.Ingest(ctx, env, body, event.SourceWebhook)
	if err != nil {
		r := result{status: 500, outcome: outcome.PersistFailed, env: env, err: err, ing: res, stage: stagePersist}
		if errors.Is(err, ingest.ErrEnqueue) {
			r.outcome, r.stage = outcome.EnqueueFailed, stageEnqueue
		}
		return failed(ctx, r)
	}
	return result{status: 200, outcome: res.Outcome, env: env, ing: res}
}

// failed is r, a failed AWS call's 500, as throttling (503) or a timeout
// (504) when it was one.
func failed(ctx context.Context, r result) result {
	switch {
	case fault.Throttled(r.err):
		r.status, r.outcome = 503, outcome.Throttled
	case fault.Timeout(r.err) || ctx.Err() != nil:
		r.status, r.outcome = 504, outcome.Timeout
	}
	return r
}

// budget bounds the AWS calls of one request: Budget from now, or the
// request's own deadline less answerReserve when that comes first. Deadlines
// are wall-clock, so this uses time.Now rather than the injectable clock.
func (h *Handler) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(h.cfg.Budget)
	if d, ok := ctx.Deadline(); ok && d.Add(-answerReserve).Before(deadline) {
		deadline = d.Add(-answerReserve)
	}
	return context.WithDeadline(ctx, deadline)
}

var (
	errTooLarge  = errors.New("receiver: body over the size limit")
	errBadBase64 = errors.New("receiver: body is not valid base64")
)

// body returns the raw bytes that were signed: the body as API Gateway
// passed it, decoded when it is base64. It fails with errTooLarge above the
// size limit and errBadBase64 when a base64 body does not decode.
func (h *Handler) body(req events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if !req.IsBase64Encoded {
		if len(req.Body) > h.cfg.MaxBodyBytes {
			return nil, errTooLarge
		}
		return []byte(req.Body), nil
	}
	// Decide on the encoded length first, so an oversized body is never
	// decoded into memory.
	if base64.StdEncoding.DecodedLen(len(req.Body)) > h.cfg.MaxBodyBytes+2 {
		return nil, errTooLarge
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, errBadBase64
	}
	if len(b) > h.cfg.MaxBodyBytes {
		return nil, errTooLarge
	}
	return b, nil
}

// Response bodies: generic on purpose.
var bodies = map[int]string{
	200: `{"received":true}`,
	400: `{"error":"invalid webhook request"}`,
	404: `{"error":"not found"}`,
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

// maxLoggedError bounds the error text on the log line. Errors name ids and
// causes, never payloads; the bound keeps it so whatever a dependency puts
// in its message.
const maxLoggedError = 512

func (h *Handler) log(ctx context.Context, req events.APIGatewayV2HTTPRequest, r result, latency time.Duration) {
	// slog.Attr values, not ...any: LogAttrs spares boxing every field, a
	// noticeable share of the receiver's compute per event.
	attrs := make([]slog.Attr, 0, 20)
	attrs = append(attrs,
		slog.String("request_id", req.RequestContext.RequestID),
		slog.Int("status_code", r.status),
		slog.Float64("latency_ms", float64(latency.Microseconds())/1000),
	)
	// Stripe's lines carry no provider: it is the default, and the field
	// would lengthen the busiest line.
	if r.provider != "" && r.provider != provider.Stripe {
		attrs = append(attrs, slog.String("provider", r.provider))
	}
	if r.env.ID != "" {
		attrs = append(attrs, slog.String("event_id", r.env.ID), slog.String("event_type", r.env.Type))
	}
	if r.replayOf != "" {
		attrs = append(attrs, slog.String("replay_of", r.replayOf))
	}
	if r.err != nil {
		msg := r.err.Error()
		if len(msg) > maxLoggedError {
			msg = msg[:maxLoggedError] + "…"
		}
		attrs = append(attrs, slog.String("error", msg))
	}
	ms := make([]metrics.Metric, 0, 6)
	ms = append(ms, metrics.C("requests", 1), metrics.Ms("latency", latency))
	switch r.stage {
	case stageSecrets:
		attrs = append(attrs, slog.String("failed_at", r.stage))
		ms = append(ms, metrics.C("secrets_failures", 1))
	case stagePersist:
		attrs = append(attrs, slog.String("failed_at", r.stage))
		ms = append(ms, metrics.C("persist_failures", 1))
	case stageEnqueue:
		attrs = append(attrs, slog.String("failed_at", r.stage))
		ms = append(ms, metrics.C("enqueue_failures", 1))
	}
	if r.apiVersion != "" {
		attrs = append(attrs, slog.String("api_version", r.apiVersion))
		ms = append(ms, metrics.C("api_version_mismatch", 1))
	}
	// These metrics are their own log fields (value 1): a second field of
	// the same name would make the line ambiguous JSON and the metric lost.
	if r.ing.HashConflict {
		ms = append(ms, metrics.C("payload_hash_conflict", 1))
	}
	if r.ing.Record.PayloadOmitted {
		ms = append(ms, metrics.C("payload_omitted", 1))
	}
	if r.ing.AccountErr != nil {
		// The event is stored: only the reconciler's list of accounts
		// waits, for the account's next event.
		attrs = append(attrs, slog.String("account_error", r.ing.AccountErr.Error()))
		ms = append(ms, metrics.C("account_record_failures", 1))
	}
	dims := []metrics.Dim{{Name: "function", Value: "receiver"}, {Name: "outcome", Value: string(r.outcome)}}
	attrs = append(attrs, metrics.Attrs(h.cfg.Now(), dims, ms...)...)
	level := slog.LevelInfo
	switch {
	case r.status >= 500:
		level = slog.LevelError
	case r.status >= 400:
		level = slog.LevelWarn
	}
	h.cfg.Logger.LogAttrs(ctx, level, "webhook", attrs...)
}
