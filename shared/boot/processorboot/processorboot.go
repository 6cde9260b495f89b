package processorboot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// Config is the processor's configuration: what ConfigFromEnv reads from
// the environment the template gives the function, or what a caller in
// the same process builds.
type Config struct {
	boot.Common
	// MaxReceiveCount is the queue's redrive maxReceiveCount
	// (MAX_RECEIVE_COUNT), Concurrency PROCESSOR_CONCURRENCY, BackoffBase
	// and BackoffMax the retries' (RETRY_BACKOFF_BASE, RETRY_BACKOFF_MAX):
	// see processor.Config.
	MaxReceiveCount, Concurrency int
	BackoffBase, BackoffMax      time.Duration
	// APIBase is Stripe's API (STRIPE_API_BASE; empty: Stripe's own), APIKey
	// its key (nil: none).
	APIBase string
	APIKey  *secrets.Secret
	// Fields is the mirror's field allowlist (MIRROR_KEEP_FIELDS).
	Fields *mirror.Fields
	// ForwardURL is the built-in forward effect's target (FORWARD_URL;
	// empty: off), ForwardSecret its signing secret (nil: unsigned).
	ForwardURL    string
	ForwardSecret *secrets.Secret
	// Effects is the configuration of each of the team's effects that is
	// on (boot.Reader.Effects), for effect.Registry.Build.
	Effects map[string]effect.Config
}

// ConfigFromEnv reads the processor's configuration from env, reporting
// every problem at once; effects (the team's, nil for none) say which
// settings and secrets their configuration needs. Secrets held in SSM are
// read through cfg on first need, never now.
func ConfigFromEnv(env boot.Env, cfg aws.Config, effects *effect.Registry) (Config, error) {
	r := boot.NewReader(env, cfg)
	c := Config{Common: r.Common()}
	c.MaxReceiveCount = r.Integer("MAX_RECEIVE_COUNT", 0)
	if c.MaxReceiveCount <= 0 {
		r.Fail(errors.New("MAX_RECEIVE_COUNT must be the queue's redrive maxReceiveCount"))
	}
	c.Concurrency = r.Integer("PROCESSOR_CONCURRENCY", processor.DefaultConcurrency)
	c.BackoffBase = r.Duration("RETRY_BACKOFF_BASE", processor.DefaultBackoffBase)
	c.BackoffMax = r.Duration("RETRY_BACKOFF_MAX", processor.DefaultBackoffMax)
	if err := checkBackoff(c.BackoffBase, c.BackoffMax, c.MaxReceiveCount); err != nil {
		r.Fail(err)
	}
	c.APIBase = r.StripeAPIBase(func(v string) error { _, err := stripeapi.BaseURL(v); return err })
	var err error
	if c.Fields, err = mirror.ParseFields(r.MirrorKeepFields()); err != nil {
		r.Fail(fmt.Errorf("MIRROR_KEEP_FIELDS: %w", err))
	}
	c.ForwardURL = r.Checked("FORWARD_URL", "", func(v string) error {
		if v == "" {
			return nil
		}
		return effect.CheckURL(v)
	})
	var specs []effect.Spec
	if effects != nil {
		specs = effects.Specs()
	}
	c.Effects = r.Effects(specs)
	c.APIKey = r.StripeAPIKey(false)
	if c.ForwardURL != "" {
		c.ForwardSecret = r.Secret("FORWARD_SECRET", false)
		if c.ForwardSecret == nil && c.Livemode {
			// The application could not tell live events from anyone's.
			r.Fail(errors.New("FORWARD_URL is set without a signing secret " +
				"(FORWARD_SECRET_PARAMETER): in live mode forwarded events must be signed"))
		}
	}
	return c, r.Err("processor")
}

// checkBackoff refuses retries whose backoff is not 0 < base <= max, or
// whose whole budget is past processor.MaxRetryBudget.
func checkBackoff(base, most time.Duration, maxReceive int) error {
	switch budget := processor.RetryBudget(base, most, maxReceive); {
	case base <= 0 || most < base:
		return fmt.Errorf("RETRY_BACKOFF_BASE=%v, RETRY_BACKOFF_MAX=%v: want 0 < base <= max", base, most)
	case budget > processor.MaxRetryBudget:
		// SQS would delete messages unseen before they are dead-lettered.
		return fmt.Errorf("RETRY_BACKOFF_BASE=%v, RETRY_BACKOFF_MAX=%v and MAX_RECEIVE_COUNT=%d retry an event for %v, over %v (half the queue's retention)",
			base, most, maxReceive, budget, processor.MaxRetryBudget)
	}
	return nil
}

// New builds the processor's handler from c (ConfigFromEnv in Lambda),
// running the team's effects (effects, hooks.Registry(); nil for none),
// which it reads and never changes: it builds the effects declared there
// (effect.Spec) with their configuration (c.Effects: EFFECT_SETTINGS,
// EFFECT_SECRETS), the processor being the one function that runs them.
//
// When FORWARD_URL is set, the built-in forward effect (effect.Forward)
// runs after them for every type: its target must pass effect.CheckURL,
// and in live mode a signing secret must be configured
// (FORWARD_SECRET_PARAMETER; FORWARD_SECRET locally), or the cold start
// fails. STRIPE_API_BASE must pass stripeapi.BaseURL.
//
// The Stripe API key (STRIPE_API_KEY_PARAMETER; STRIPE_API_KEY locally)
// serves events too large to store, and settles events of one object in
// the same second by reading the object (mirror.Mirror.Settle): without
// one, the first fail permanently and the second are ordered by their
// ids. The key and the forward secret are read on first need and
// kept; a failure to read one fails the event that needed it, retryably.
func New(ctx context.Context, c Config, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*processor.Processor, error) {
	var fetcher processor.Fetcher
	var api mirror.ObjectReader
	var thin processor.ThinReader
	if c.APIKey != nil {
		f, err := newFetcher(c.APIKey, c.APIBase)
		if err != nil {
			return nil, fmt.Errorf("boot processor: %w", err)
		}
		fetcher, api, thin = f, f, f
	} else {
		logger.WarnContext(ctx, "no Stripe API key configured (STRIPE_API_KEY_PARAMETER): events too large to store will fail permanently, "+
			"events of one object in the same second are ordered by their ids, not by Stripe's API, and thin events are retried until one is")
	}
	eff, err := c.effects(ctx, logger, effects)
	if err != nil {
		return nil, err
	}
	sqsClient := sqs.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	// With effects, an event's standing in the mirror is read before they
	// run (a tie settled, an audit's claim honoured) so that no outside
	// call is made for a commit that may not happen.
	var preread processor.Prereader
	if eff != nil {
		preread = mirror.Prereader{Reader: &mirror.Reader{DB: db, Table: c.MirrorTable}, TiesByAPI: api != nil}
	}
	return processor.New(processor.Config{
		Store:           c.Events(db),
		Mirror:          &mirror.Mirror{Table: c.MirrorTable, Fields: c.Fields, TiesByAPI: api != nil},
		Effects:         eff,
		Preread:         preread,
		Fetcher:         fetcher,
		API:             api,
		Thin:            thin,
		Visibility:      sqsClient,
		QueueURL:        c.QueueURL,
		MaxReceiveCount: c.MaxReceiveCount,
		Concurrency:     c.Concurrency,
		BackoffBase:     c.BackoffBase,
		BackoffMax:      c.BackoffMax,
		Logger:          logger,
	})
}

// effects builds the team's effects (nil for none) with c.Effects, and
// the forward effect after them when c.ForwardURL is set.
func (c Config) effects(ctx context.Context, logger *slog.Logger, effects *effect.Registry) (processor.Effects, error) {
	var eff processor.Effects
	if effects != nil {
		built, err := effects.Build(c.Effects)
		if err != nil {
			return nil, fmt.Errorf("boot processor: %w", err)
		}
		eff = built
	}
	if c.ForwardURL == "" {
		return eff, nil
	}
	if c.ForwardSecret == nil {
		logger.WarnContext(ctx, "FORWARD_URL is set without a signing secret: forwarded events are unsigned (test mode only; live mode refuses to start)")
	}
	fwd := &effect.Registry{}
	fwd.On(&forward{url: c.ForwardURL, secret: c.ForwardSecret, client: &http.Client{Timeout: 10 * time.Second}}, "*")
	return then{first: eff, next: fwd}, nil
}

// newFetcher is the processor's reader of events too large to store
// (GET /v1/events/{id}) and of objects whose events tie (their retrieve
// calls), through package stripeapi, with the key read on
// first need, and read again on a 401 (at most once a minute: a rotated
// key takes effect without a redeploy). stripe-go's own retries are off: a failed fetch fails its
// event, which the queue retries with the processor's backoff. The answer
// is bounded by store.MaxPayloadBytes, the bound on every payload the
// processor handles (stored or fetched): the mirror and the effects get
// either, and an event past it is no event Stripe sends.
func newFetcher(key *secrets.Secret, base string) (*stripeapi.Client, error) {
	return stripeapi.New(stripeapi.Config{
		KeyFunc:           key.Value,
		KeyRefused:        key.Refresh,
		BaseURL:           base,
		MaxNetworkRetries: -1,
		MaxResponseBytes:  store.MaxPayloadBytes,
	})
}

// forward is the built-in forward effect (effect.Forward) with its
// signing secret read on first use.
type forward struct {
	url    string
	secret *secrets.Secret // nil: unsigned (test mode only)
	client *http.Client
}

// Name implements effect.Handler.
func (f *forward) Name() string { return (&effect.Forward{}).Name() }

// Handle implements effect.Handler.
func (f *forward) Handle(ctx context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
	fw := &effect.Forward{URL: f.url, Client: f.client}
	if f.secret != nil {
		s, err := f.secret.Value(ctx)
		if err != nil {
			return nil, fmt.Errorf("signing secret: %w", err)
		}
		fw.Secret = s
	}
	return fw.Handle(ctx, ev)
}

// then runs first's effects (nil for none), then next's, as one: the
// team's registry is the caller's, so the forward effect runs beside it,
// after it, rather than being registered into it.
type then struct{ first, next processor.Effects }

// HandlesFor reports whether first or next has an effect for the type,
// when they can say (processor's pre-read asks).
func (t then) HandlesFor(provider, eventType string) bool {
	for _, e := range []processor.Effects{t.first, t.next} {
		h, ok := e.(interface {
			HandlesFor(provider, eventType string) bool
		})
		if e != nil && (!ok || h.HandlesFor(provider, eventType)) {
			return true
		}
	}
	return false
}

func (t then) Run(ctx context.Context, rec event.Record, payload []byte) ([]types.TransactWriteItem, error) {
	var writes []types.TransactWriteItem
	if t.first != nil {
		w, err := t.first.Run(ctx, rec, payload)
		if err != nil {
			return nil, err
		}
		writes = append(writes, w...)
	}
	w, err := t.next.Run(ctx, rec, payload)
	if err != nil {
		return nil, err
	}
	return append(writes, w...), nil
}

// FromEnv is ConfigFromEnv then New: the processor as Lambda builds it
// from the environment env, for a harness that derives that environment
// from the template (the local stack, the failure-point runs).
func FromEnv(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*processor.Processor, error) {
	c, err := ConfigFromEnv(env, cfg, effects)
	if err != nil {
		return nil, err
	}
	return New(ctx, c, cfg, logger, effects)
}

// Defaults is the processor's configuration with every default
// ConfigFromEnv takes, for a caller that builds its own: it must set the
// tables and queue (Common) and MaxReceiveCount.
func Defaults() Config {
	c, _ := ConfigFromEnv(func(string) string { return "" }, aws.Config{}, nil)
	return c
}
