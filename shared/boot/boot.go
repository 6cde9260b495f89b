// Package boot builds each function's handler from its configuration, once,
// at cold start: it reads the environment (reporting every problem at once),
// loads the AWS configuration, reads the secrets, and wires the clients into
// the handler. The functions' main packages and the local stack both call it,
// so the code that runs locally is the code that runs in Lambda.
package boot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripeapi"
)

// Env reads a configuration variable; os.Getenv in Lambda.
type Env func(key string) string

// OSEnv reads the process environment.
func OSEnv(key string) string { return os.Getenv(key) }

// reader collects every configuration problem, so one failed cold start
// reports all of them.
type reader struct {
	env  Env
	errs []error
}

func (r *reader) required(key string) string {
	v := strings.TrimSpace(r.env(key))
	if v == "" {
		r.errs = append(r.errs, fmt.Errorf("%s is not set", key))
	}
	return v
}

func (r *reader) optional(key, def string) string {
	if v := strings.TrimSpace(r.env(key)); v != "" {
		return v
	}
	return def
}

func (r *reader) duration(key string, def time.Duration) time.Duration {
	v := strings.TrimSpace(r.env(key))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if secs, err2 := strconv.Atoi(v); err2 == nil {
			return time.Duration(secs) * time.Second
		}
		r.errs = append(r.errs, fmt.Errorf("%s=%q is not a duration (like 300s or 5m)", key, v))
	}
	return d
}

func (r *reader) integer(key string, def int) int {
	v := strings.TrimSpace(r.env(key))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q is not an integer", key, v))
	}
	return n
}

func (r *reader) err(function string) error {
	if len(r.errs) == 0 {
		return nil
	}
	return fmt.Errorf("boot %s: configuration: %w", function, errors.Join(r.errs...))
}

// apiBase reads STRIPE_API_BASE, which must pass stripeapi.BaseURL: the
// API key is sent there.
func (r *reader) apiBase() string {
	v := r.optional("STRIPE_API_BASE", "")
	if _, err := stripeapi.BaseURL(v); err != nil {
		r.errs = append(r.errs, fmt.Errorf("STRIPE_API_BASE: %w", err))
	}
	return v
}

// Common is the configuration every function shares.
type Common struct {
	EventsTable string
	MirrorTable string
	QueueURL    string
	Livemode    bool
	Retention   time.Duration
}

func (r *reader) common() Common {
	c := Common{
		EventsTable: r.required("EVENTS_TABLE"),
		MirrorTable: r.required("MIRROR_TABLE"),
		QueueURL:    r.required("QUEUE_URL"),
		Retention:   time.Duration(r.integer("RETENTION_DAYS", 90)) * 24 * time.Hour,
	}
	r.secretSources()
	switch mode := r.optional("STRIPE_MODE", "test"); mode {
	case "test":
	case "live":
		c.Livemode = true
	default:
		r.errs = append(r.errs, fmt.Errorf("STRIPE_MODE=%q: want test or live", mode))
	}
	return c
}

// secretParameters maps each variable that carries a secret itself (the
// local stack's and the tests' way) to the one naming its SSM SecureString
// parameter (the only way in Lambda).
var secretParameters = map[string]string{
	"STRIPE_WEBHOOK_SECRET": "STRIPE_WEBHOOK_SECRETS_PARAMETER",
	"STRIPE_API_KEY":        "STRIPE_API_KEY_PARAMETER",
	"FORWARD_SECRET":        "FORWARD_SECRET_PARAMETER",
}

// inLambda reports whether the process runs in Lambda, whose runtime sets
// AWS_LAMBDA_FUNCTION_NAME.
func (r *reader) inLambda() bool {
	return strings.TrimSpace(r.env("AWS_LAMBDA_FUNCTION_NAME")) != ""
}

// secretSources reports, as configuration errors, a secret in a plain
// variable inside Lambda (anyone allowed lambda:GetFunctionConfiguration
// reads it, and it would win over the SSM parameter), and a parameter
// outside the stage's own: with STAGE set (the template sets it), a
// parameter's path must have the stage as one of its segments, so a
// staging stack pointed at /webhook-inbox/prod/... fails its cold start
// instead of reading prod's live secrets. The template's Rules cannot say
// this: CloudFormation's rule functions compare whole strings only.
func (r *reader) secretSources() {
	stage := strings.TrimSpace(r.env("STAGE"))
	for _, local := range slices.Sorted(maps.Keys(secretParameters)) {
		param := secretParameters[local]
		if r.inLambda() && strings.TrimSpace(r.env(local)) != "" {
			r.errs = append(r.errs, fmt.Errorf("%s is set in the function's environment: in Lambda a secret comes only from the SSM SecureString parameter %s names; remove the variable (and rotate the secret it exposed)", local, param))
		}
		name := strings.TrimSpace(r.env(param))
		if stage != "" && name != "" && !strings.Contains(name+"/", "/"+stage+"/") {
			r.errs = append(r.errs, fmt.Errorf("%s=%s is not one of stage %s's parameters: its path must have %q as a segment (like /webhook-inbox/%s/stripe/...)", param, name, stage, stage, stage))
		}
	}
}

// secret reads a secret: outside Lambda the local-only variable when set
// (the local stack and tests), otherwise the SSM SecureString parameter it
// names.
func secret(ctx context.Context, r *reader, client secrets.SSM, localKey, paramKey string) (string, error) {
	if v := strings.TrimSpace(r.env(localKey)); v != "" && !r.inLambda() {
		return v, nil
	}
	name := r.required(paramKey)
	if name == "" {
		return "", nil
	}
	return secrets.Read(ctx, client, name)
}

// HandledTypes returns the event-type allowlist of HandledTypeList as a
// predicate.
func HandledTypes(env Env, effects *effect.Registry) func(string) bool {
	set := map[string]bool{}
	for _, t := range HandledTypeList(env, effects) {
		set[t] = true
	}
	return func(t string) bool { return set[t] }
}

// Receiver builds the receiver's handler.
func Receiver(ctx context.Context, env Env, cfg aws.Config, logger *slog.Logger) (*receiver.Handler, error) {
	r := &reader{env: env}
	c := r.common()
	tolerance := r.duration("SIGNATURE_TOLERANCE", signature.DefaultTolerance)
	skew := r.duration("SIGNATURE_FUTURE_SKEW", signature.DefaultFutureSkew)
	maxBody := r.integer("MAX_BODY_BYTES", receiver.DefaultMaxBodyBytes)
	budget := r.duration("RECEIVER_BUDGET", receiver.DefaultBudget)
	if err := r.err("receiver"); err != nil {
		return nil, err
	}
	raw, err := secret(ctx, r, ssm.NewFromConfig(cfg), "STRIPE_WEBHOOK_SECRET", "STRIPE_WEBHOOK_SECRETS_PARAMETER")
	if err == nil {
		err = r.err("receiver")
	}
	if err != nil {
		return nil, err
	}
	v, err := signature.New(secrets.List(raw), signature.Options{Tolerance: tolerance, FutureSkew: skew})
	if err != nil {
		return nil, fmt.Errorf("boot receiver: %w", err)
	}
	return receiver.New(receiver.Config{
		Verifier:     v,
		Ingester:     NewIngester(cfg, c, HandledTypes(env, hooks.Registry())),
		Livemode:     c.Livemode,
		APIVersion:   stripe.APIVersion,
		MaxBodyBytes: maxBody,
		Budget:       budget,
		Logger:       logger,
	}), nil
}

// NewIngester builds the ingest path shared by the receiver and the
// reconciler.
func NewIngester(cfg aws.Config, c Common, handled func(string) bool) *ingest.Ingester {
	return &ingest.Ingester{
		Store:    &store.Events{DB: dynamodb.NewFromConfig(cfg), Table: c.EventsTable, Retention: c.Retention},
		Queue:    &queue.Queue{Client: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		Provider: event.ProviderStripe,
		Handled:  handled,
	}
}

// Processor builds the processor's handler, with the effects registered in
// effects (nil for none). When FORWARD_URL is set, it also registers the
// built-in forward effect (see effect.Forward) for every type, in effects:
// its target must pass effect.CheckURL, and in live mode it must have a
// signing secret (FORWARD_SECRET_PARAMETER; FORWARD_SECRET locally), or the
// cold start fails. STRIPE_API_BASE must pass stripeapi.BaseURL.
func Processor(ctx context.Context, env Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*processor.Processor, error) {
	r := &reader{env: env}
	c := r.common()
	maxReceive := r.integer("MAX_RECEIVE_COUNT", 0)
	if maxReceive <= 0 {
		r.errs = append(r.errs, errors.New("MAX_RECEIVE_COUNT must be the queue's redrive maxReceiveCount"))
	}
	concurrency := r.integer("PROCESSOR_CONCURRENCY", processor.DefaultConcurrency)
	backoff := r.duration("RETRY_BACKOFF_BASE", processor.DefaultBackoffBase)
	apiBase := r.apiBase()
	fields, err := mirror.ParseFields(r.optional("MIRROR_KEEP_FIELDS", ""))
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("MIRROR_KEEP_FIELDS: %w", err))
	}
	forwardURL := r.optional("FORWARD_URL", "")
	if forwardURL != "" {
		if err := effect.CheckURL(forwardURL); err != nil {
			r.errs = append(r.errs, fmt.Errorf("FORWARD_URL: %w", err))
		}
	}
	if err := r.err("processor"); err != nil {
		return nil, err
	}
	// The API key is only needed for events too large to store; a missing
	// key is reported when such an event arrives, not at cold start.
	var fetcher processor.Fetcher
	if key, err := secret(ctx, &reader{env: env}, ssm.NewFromConfig(cfg), "STRIPE_API_KEY", "STRIPE_API_KEY_PARAMETER"); err == nil && key != "" {
		f, err := newEventFetcher(key, apiBase)
		if err != nil {
			return nil, fmt.Errorf("boot processor: %w", err)
		}
		fetcher = f
	} else if err != nil {
		logger.WarnContext(ctx, "no Stripe API key: events too large to store will fail permanently", slog.String("error", err.Error()))
	}
	if forwardURL != "" {
		fwdSecret, err := secret(ctx, &reader{env: env}, ssm.NewFromConfig(cfg), "FORWARD_SECRET", "FORWARD_SECRET_PARAMETER")
		if err != nil {
			return nil, fmt.Errorf("boot processor: forward secret: %w", err)
		}
		switch {
		case fwdSecret == "" && c.Livemode:
			// The application could not tell live events from anyone's.
			return nil, errors.New("boot processor: configuration: FORWARD_URL is set without a signing secret " +
				"(FORWARD_SECRET_PARAMETER): in live mode forwarded events must be signed")
		case fwdSecret == "":
			logger.WarnContext(ctx, "FORWARD_URL is set without a signing secret: forwarded events are unsigned (test mode only; live mode refuses to start)")
		}
		if effects == nil {
			effects = &effect.Registry{}
		}
		effects.On(&effect.Forward{URL: forwardURL, Secret: fwdSecret, Client: &http.Client{Timeout: 10 * time.Second}}, "*")
	}
	var eff processor.Effects
	if effects != nil {
		eff = effects
	}
	sqsClient := sqs.NewFromConfig(cfg)
	return processor.New(processor.Config{
		Store:           &store.Events{DB: dynamodb.NewFromConfig(cfg), Table: c.EventsTable, Retention: c.Retention},
		Mirror:          &mirror.Mirror{Table: c.MirrorTable, Fields: fields},
		Effects:         eff,
		Fetcher:         fetcher,
		Visibility:      sqsClient,
		QueueURL:        c.QueueURL,
		MaxReceiveCount: maxReceive,
		Concurrency:     concurrency,
		BackoffBase:     backoff,
		Logger:          logger,
	})
}

// HandledTypeList lists the event types the pipeline handles, sorted:
// EVENT_TYPES (comma separated) when set, else the types the mirror handles
// and those the team's effects are registered for. The receiver accepts
// exactly these (others are recorded as ignored) and the reconciler lists
// exactly these, so it repairs what the receiver would have accepted.
func HandledTypeList(env Env, effects *effect.Registry) []string {
	var out []string
	if v := strings.TrimSpace(env("EVENT_TYPES")); v != "" {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	} else {
		out = append(out, mirror.Types...)
		if effects != nil {
			out = append(out, effects.Types()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Stripe's request-rate limits per account, and the reconciler's default
// share of them: it leaves headroom for the team's own API calls.
const (
	StripeRateLimitTest = 25
	StripeRateLimitLive = 100
	reconcileRateTest   = 20
	reconcileRateLive   = 80
)

// Reconciler builds the reconciler's handler. Its configuration, beyond the
// common variables: the API key (STRIPE_API_KEY locally, else the SSM
// parameter STRIPE_API_KEY_PARAMETER), STRIPE_API_BASE, EVENT_TYPES, and
// RECONCILE_OVERLAP, RECONCILE_SETTLE, RECONCILE_SINCE (how far back a
// first run looks), RECONCILE_STUCK_AFTER, RECONCILE_MAX_PAGES,
// RECONCILE_MAX_STUCK, RECONCILE_RATE_LIMIT (requests/s) and
// RECONCILE_DEADLINE_MARGIN. inboxctl builds it the same way to run once.
func Reconciler(ctx context.Context, env Env, cfg aws.Config, logger *slog.Logger) (*reconcile.Reconciler, error) {
	r := &reader{env: env}
	c := r.common()
	rc := reconcile.Config{
		Overlap:        r.duration("RECONCILE_OVERLAP", reconcile.DefaultOverlap),
		Settle:         r.duration("RECONCILE_SETTLE", reconcile.DefaultSettle),
		Lookback:       r.duration("RECONCILE_SINCE", reconcile.Retention),
		StuckAfter:     r.duration("RECONCILE_STUCK_AFTER", reconcile.DefaultStuckAfter),
		MaxPages:       r.integer("RECONCILE_MAX_PAGES", reconcile.DefaultMaxPages),
		MaxStuck:       r.integer("RECONCILE_MAX_STUCK", reconcile.DefaultMaxStuck),
		DeadlineMargin: r.duration("RECONCILE_DEADLINE_MARGIN", reconcile.DefaultDeadlineMargin),
		Types:          HandledTypeList(env, hooks.Registry()),
		Livemode:       c.Livemode,
		Provider:       event.ProviderStripe,
		Logger:         logger,
	}
	limit, ceiling := reconcileRateTest, StripeRateLimitTest
	if c.Livemode {
		limit, ceiling = reconcileRateLive, StripeRateLimitLive
	}
	limit = r.integer("RECONCILE_RATE_LIMIT", limit)
	if limit <= 0 || limit >= ceiling {
		r.errs = append(r.errs, fmt.Errorf("RECONCILE_RATE_LIMIT=%d: want 1 to %d requests/s, under Stripe's limit in this mode", limit, ceiling-1))
	}
	apiBase := r.apiBase()
	if err := r.err("reconciler"); err != nil {
		return nil, err
	}
	key, err := secret(ctx, r, ssm.NewFromConfig(cfg), "STRIPE_API_KEY", "STRIPE_API_KEY_PARAMETER")
	if err == nil {
		err = r.err("reconciler")
	}
	if err != nil {
		return nil, err
	}
	rc.Stripe, err = stripeapi.New(stripeapi.Config{Key: key, BaseURL: apiBase, RateLimit: float64(limit)})
	if err != nil {
		return nil, fmt.Errorf("boot reconciler: %w", err)
	}
	in := NewIngester(cfg, c, HandledTypes(env, hooks.Registry()))
	rc.Ingester = in
	rc.Queue = in.Queue
	db := dynamodb.NewFromConfig(cfg)
	rc.Events = &store.Events{DB: db, Table: c.EventsTable}
	rc.Checkpoints = &store.Checkpoints{DB: db, Table: c.EventsTable}
	rec, err := reconcile.New(rc)
	if err != nil {
		return nil, fmt.Errorf("boot reconciler: %w", err)
	}
	return rec, nil
}
