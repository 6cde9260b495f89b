package reconcilerboot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// Stripe's request-rate limits per account, and the reconciler's default
// share of them: it leaves headroom for the team's own API calls.
const (
	StripeRateLimitTest = 25
	StripeRateLimitLive = 100
	reconcileRateTest   = 20
	reconcileRateLive   = 80
)

// New builds the reconciler's handler. effects are the team's effects
// (hooks.Registry()); the reconciler reads only their event types, which
// it lists beside the mirror's (boot.HandledTypeList).
//
// Its configuration, beyond the common variables: the API key
// (STRIPE_API_KEY locally, else the SSM parameter STRIPE_API_KEY_PARAMETER,
// read at the first run and kept), STRIPE_API_BASE, EVENT_TYPES, and
// RECONCILE_OVERLAP, RECONCILE_SETTLE, RECONCILE_RATE and RECONCILE_SINCE
// (see firstLookback), RECONCILE_STUCK_AFTER, RECONCILE_MAX_PAGES,
// RECONCILE_MAX_STUCK, RECONCILE_STUCK_PROVIDERS (the providers whose
// stuck records the sweep reads, comma-separated; every provider when
// unset), RECONCILE_RATE_LIMIT (requests/s, shared by every account's
// listings) and RECONCILE_DEADLINE_MARGIN, and STRIPE_CONNECT_ACCOUNTS (a
// Connect platform's connected accounts, acct_..., comma-separated, each
// listed with the Stripe-Account header, beside those the inbox has stored
// an event of) and STRIPE_CONNECT_LIST_ACCOUNTS ("true": every account the
// platform lists too, read at the start of each run; "false" by default).
//
// GitHub's missed deliveries are redelivered when GITHUB_HOOKS lists hooks
// (repo:OWNER/REPO/HOOK_ID, org:ORG/HOOK_ID, app:APP_ID; see
// githubapi.ParseHooks), with a token for repository and organization
// hooks (GITHUB_API_TOKEN locally, else the SSM parameter
// GITHUB_API_TOKEN_PARAMETER) and an App's private key for App hooks
// (GITHUB_APP_PRIVATE_KEY, else GITHUB_APP_PRIVATE_KEY_PARAMETER), each
// read at the first request that needs it; GITHUB_API_BASE for a stand-in
// or GitHub Enterprise Server; GITHUB_MAX_REDELIVERIES per hook and run,
// GITHUB_REDELIVERY_BACKOFF (the wait after a first redelivery, doubled
// after each) and GITHUB_REDELIVERY_ASKS (the asks before one is given
// up). Without GITHUB_HOOKS the reconciler is Stripe's alone.
func New(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*reconcile.Reconciler, error) {
	r := boot.NewReader(env, cfg)
	c := r.Common()
	rc := reconcile.Config{
		Overlap:        r.Duration("RECONCILE_OVERLAP", reconcile.DefaultOverlap),
		Settle:         r.Duration("RECONCILE_SETTLE", reconcile.DefaultSettle),
		FirstLookback:  firstLookback(r),
		StuckAfter:     r.Duration("RECONCILE_STUCK_AFTER", reconcile.DefaultStuckAfter),
		MaxPages:       r.Integer("RECONCILE_MAX_PAGES", reconcile.DefaultMaxPages),
		MaxStuck:       r.Integer("RECONCILE_MAX_STUCK", reconcile.DefaultMaxStuck),
		DeadlineMargin: r.Duration("RECONCILE_DEADLINE_MARGIN", reconcile.DefaultDeadlineMargin),
		Types:          boot.HandledTypeList(env, effects),
		// A Connect platform's connected accounts, listed with the
		// Stripe-Account header, each with checkpoints of its own.
		ConnectAccounts: connectAccounts(r),
		Livemode:        c.Livemode,
		Provider:        event.ProviderStripe,
		Logger:          logger,
	}
	limit, ceiling := reconcileRateTest, StripeRateLimitTest
	if c.Livemode {
		limit, ceiling = reconcileRateLive, StripeRateLimitLive
	}
	limit = r.Integer("RECONCILE_RATE_LIMIT", limit)
	if limit <= 0 || limit >= ceiling {
		r.Fail(fmt.Errorf("RECONCILE_RATE_LIMIT=%d: want 1 to %d requests/s, under Stripe's limit in this mode", limit, ceiling-1))
	}
	apiBase := r.Checked("STRIPE_API_BASE", "", func(v string) error { _, err := stripeapi.BaseURL(v); return err })
	key := r.Secret("STRIPE_API_KEY", true)
	rc.StuckProviders = stuckProviders(r)
	listAccounts := r.Checked("STRIPE_CONNECT_LIST_ACCOUNTS", "false", func(v string) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("STRIPE_CONNECT_LIST_ACCOUNTS=%q: want true or false", v)
		}
		return nil
	}) == "true"
	gh := readGitHub(r)
	if err := r.Err("reconciler"); err != nil {
		return nil, err
	}
	var err error
	var ghc *githubapi.Client
	if len(gh.hooks) > 0 {
		ghc, err = githubapi.New(githubapi.Config{Token: gh.token, AppKey: gh.appKey, BaseURL: gh.base})
		if err != nil {
			return nil, fmt.Errorf("boot reconciler: %w", err)
		}
	}
	client, err := newLister(key, apiBase, limit)
	if err != nil {
		return nil, fmt.Errorf("boot reconciler: %w", err)
	}
	rc.Stripe = client
	if listAccounts {
		rc.ListAccounts = client
	}
	in := boot.NewIngester(cfg, c, boot.HandledTypes(env, effects))
	rc.Ingester = in
	rc.Queue = in.Queue
	db := dynamodb.NewFromConfig(cfg)
	rc.Events = c.Events(db)
	rc.Checkpoints = &store.Checkpoints{DB: db, Table: c.EventsTable}
	rc.Runs = &store.Runs{DB: db, Table: c.EventsTable}
	// The connected accounts the inbox has stored an event of (the
	// ingest path records each), listed without being configured.
	rc.SeenAccounts = &store.Accounts{DB: db, Table: c.EventsTable}
	if len(gh.hooks) > 0 {
		rc.Redeliverer, err = redeliver.New(redeliver.Config{GitHub: ghc, Hooks: gh.hooks, Events: rc.Events, Checkpoints: rc.Checkpoints,
			Redeliveries:    &store.Redeliveries{DB: db, Table: c.EventsTable, Keep: githubapi.Retention},
			MaxRedeliveries: gh.maxRedeliveries, RedeliveryBackoff: gh.backoff, MaxAsks: gh.maxAsks})
		if err != nil {
			return nil, fmt.Errorf("boot reconciler: %w", err)
		}
	}
	rec, err := reconcile.New(rc)
	if err != nil {
		return nil, fmt.Errorf("boot reconciler: %w", err)
	}
	return rec, nil
}

// newLister is the reconciler's client of Stripe's events list, paced to
// limit requests a second. The key is read at the first run, and read
// again on a 401 (at most once a minute), so a key rotated in Parameter
// Store takes effect without a redeploy.
func newLister(key *secrets.Secret, base string, limit int) (*stripeapi.Client, error) {
	return stripeapi.New(stripeapi.Config{KeyFunc: key.Value, KeyRefused: key.Refresh, BaseURL: base, RateLimit: float64(limit)})
}

// firstLookback is how far before its start a group's first run sets the
// group's start (reconcile.Config.FirstLookback): RECONCILE_SINCE when
// set, else one period of the reconciler's schedule (RECONCILE_RATE, the
// template's ReconcileRate), which covers the stretch between a deployment
// and its first scheduled run; a cron() schedule, or none, takes
// reconcile.DefaultFirstLookback.
func firstLookback(r *boot.Reader) time.Duration {
	if d := r.Duration("RECONCILE_SINCE", 0); d > 0 {
		return d
	}
	if p, err := reconcile.SchedulePeriod(r.Optional("RECONCILE_RATE", "")); err == nil {
		return p
	}
	return reconcile.DefaultFirstLookback
}

// connectAccounts reads STRIPE_CONNECT_ACCOUNTS: the connected accounts
// (acct_..., comma-separated) whose events the reconciler lists beside
// the platform's; none when unset.
func connectAccounts(r *boot.Reader) []string {
	var out []string
	for _, a := range strings.Split(r.Optional("STRIPE_CONNECT_ACCOUNTS", ""), ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !strings.HasPrefix(a, "acct_") || strings.ContainsAny(a, "/# ") {
			r.Fail(fmt.Errorf("STRIPE_CONNECT_ACCOUNTS: %q is not a connected account's id (acct_...)", a))
			continue
		}
		out = append(out, a)
	}
	return out
}

// stuckProviders reads RECONCILE_STUCK_PROVIDERS: the providers whose
// lanes the stuck sweep reads (16 queries each per run), every provider
// (event.Providers) when unset. A deployment that serves Stripe alone
// needs only Stripe's.
//
// The senders GENERIC_SENDERS declares (provider.Sender) have lanes of
// their own: unset, the sweep reads theirs too; set, it may name them.
func stuckProviders(r *boot.Reader) []string {
	known := slices.Clone(event.Providers)
	senders, err := provider.ParseSenders(r.Optional(provider.SendersVariable, ""))
	if err != nil {
		r.Fail(err)
	}
	for _, s := range senders {
		known = append(known, s.Name)
	}
	var out []string
	for _, p := range strings.Split(r.Optional("RECONCILE_STUCK_PROVIDERS", ""), ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case !slices.Contains(known, p):
			r.Fail(fmt.Errorf("RECONCILE_STUCK_PROVIDERS: %q is not a provider (want some of %s)", p, strings.Join(known, ", ")))
		default:
			out = append(out, p)
		}
	}
	if len(out) == 0 && len(senders) > 0 {
		return known
	}
	return out
}

// github is the GitHub part of the reconciler's configuration.
type github struct {
	hooks           []githubapi.Hook
	token, appKey   func(context.Context) (string, error)
	base            string
	maxRedeliveries int
	backoff         time.Duration
	maxAsks         int
}

// readGitHub reads GITHUB_HOOKS and the credentials its hooks need: a
// token only for repository and organization hooks, an App's key only for
// App hooks, so a deployment holds no credential it does not use.
func readGitHub(r *boot.Reader) github {
	var g github
	var err error
	spec := r.Optional("GITHUB_HOOKS", "")
	if g.hooks, err = githubapi.ParseHooks(spec); err != nil {
		r.Fail(fmt.Errorf("GITHUB_HOOKS: %w", err))
		return g
	}
	if len(g.hooks) == 0 {
		return g
	}
	var tokenHooks, appHooks bool
	for _, h := range g.hooks {
		tokenHooks = tokenHooks || h.Kind != githubapi.KindApp
		appHooks = appHooks || h.Kind == githubapi.KindApp
	}
	if tokenHooks {
		if s := r.Secret("GITHUB_API_TOKEN", true); s != nil {
			g.token = s.Value
		}
	}
	if appHooks {
		if s := r.Secret("GITHUB_APP_PRIVATE_KEY", true); s != nil {
			g.appKey = s.Value
		}
	}
	g.base = r.Checked("GITHUB_API_BASE", "", func(v string) error {
		if v == "" {
			return nil
		}
		_, err := githubapi.New(githubapi.Config{BaseURL: v})
		return err
	})
	g.maxRedeliveries = r.Integer("GITHUB_MAX_REDELIVERIES", redeliver.DefaultMaxRedeliveries)
	g.backoff = r.Duration("GITHUB_REDELIVERY_BACKOFF", redeliver.DefaultRedeliveryBackoff)
	g.maxAsks = r.Integer("GITHUB_REDELIVERY_ASKS", redeliver.DefaultMaxAsks)
	return g
}

// NewAuditor builds the audit of the mirror against Stripe's API
// (package audit) from the reconciler's configuration: its Stripe API
// key (read access to subscriptions), STRIPE_API_BASE, its rate limit
// (RECONCILE_RATE_LIMIT, under Stripe's limit in the mode), and the
// mirror table with the processor's field allowlist (MIRROR_KEEP_FIELDS).
// Each run is kept in the events table's audit runs (store.Runs), for the
// console and inboxctl status.
//
// AUDIT_RUN_EFFECTS=true (the template's AuditRunEffects; default false)
// makes each repair run the team's effects (effects, built with their
// configuration as the processor builds them: EFFECT_SETTINGS,
// EFFECT_SECRETS, EFFECT_SECRETS_PATH), as an event applying the object
// would (audit.RepairEvent); otherwise a repair runs none.
func NewAuditor(ctx context.Context, env boot.Env, cfg aws.Config, effects *effect.Registry) (*audit.Auditor, error) {
	r := boot.NewReader(env, cfg)
	c := r.Common()
	limit, ceiling := reconcileRateTest, StripeRateLimitTest
	if c.Livemode {
		limit, ceiling = reconcileRateLive, StripeRateLimitLive
	}
	limit = r.Integer("RECONCILE_RATE_LIMIT", limit)
	if limit <= 0 || limit >= ceiling {
		r.Fail(fmt.Errorf("RECONCILE_RATE_LIMIT=%d: want 1 to %d requests/s, under Stripe's limit in this mode", limit, ceiling-1))
	}
	apiBase := r.Checked("STRIPE_API_BASE", "", func(v string) error { _, err := stripeapi.BaseURL(v); return err })
	key := r.Secret("STRIPE_API_KEY", true)
	fields, err := mirror.ParseFields(r.Optional("MIRROR_KEEP_FIELDS", ""))
	if err != nil {
		r.Fail(fmt.Errorf("MIRROR_KEEP_FIELDS: %w", err))
	}
	runEffects := r.Checked("AUDIT_RUN_EFFECTS", "false", func(v string) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("AUDIT_RUN_EFFECTS=%q: want true or false", v)
		}
		return nil
	}) == "true"
	var configs map[string]effect.Config
	if runEffects && effects != nil {
		configs = r.Effects(effects.Specs())
	}
	listAccounts := r.Checked("STRIPE_CONNECT_LIST_ACCOUNTS", "false", func(v string) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("STRIPE_CONNECT_LIST_ACCOUNTS=%q: want true or false", v)
		}
		return nil
	}) == "true"
	connect := connectAccounts(r)
	if err := r.Err("audit"); err != nil {
		return nil, err
	}
	api, err := newLister(key, apiBase, limit)
	if err != nil {
		return nil, fmt.Errorf("boot audit: %w", err)
	}
	db := dynamodb.NewFromConfig(cfg)
	a := &audit.Auditor{
		API:      api,
		Mirror:   &mirror.Mirror{Table: c.MirrorTable, Fields: fields, TiesByAPI: true},
		Reader:   &mirror.Reader{DB: db, Table: c.MirrorTable},
		DB:       db,
		Scan:     db,
		Runs:     &store.Runs{DB: db, Table: c.EventsTable},
		Provider: event.ProviderStripe,
		// Every account the reconciler lists events of is audited too,
		// under its own keys.
		ConnectAccounts: connect,
		SeenAccounts:    &store.Accounts{DB: db, Table: c.EventsTable},
	}
	if listAccounts {
		a.ListAccounts = api
	}
	if runEffects && effects != nil {
		built, err := effects.Build(configs)
		if err != nil {
			return nil, fmt.Errorf("boot audit: %w", err)
		}
		a.Effects = built
	}
	return a, nil
}

// AuditInput is the payload of the template's Audit schedule (AuditRate):
// the reconciler function runs the scheduled audit (audit.Scheduled)
// instead of a reconciliation. Through the reconciler, the audit shares
// its API key, its rate limit and its one-run-at-a-time concurrency, so
// the two together never exceed RECONCILE_RATE_LIMIT.
const AuditInput = `{"run":"audit"}`

// AuditResumeInput is the payload of the template's AuditResume schedule:
// a pass in progress, cut by a run's budget, is continued
// (audit.Scheduled.Resume); without one the run does nothing.
const AuditResumeInput = `{"run":"audit_resume"}`

// Handler is the reconciler function's handler: a payload {"run":"audit"}
// runs the scheduled audit, {"run":"audit_resume"} continues a pass in
// progress (AUDIT_MAX_PAGES bounds a run, default
// audit.DefaultMaxPages), any other the reconciliation (reconcile.Input).
// The audit is built at its first run, so a reconciler that never audits
// never reads its configuration.
// effects are the team's, run by the audit's repairs only with
// AUDIT_RUN_EFFECTS=true (NewAuditor).
func Handler(env boot.Env, cfg aws.Config, logger *slog.Logger, rec *reconcile.Reconciler, effects *effect.Registry) func(context.Context, json.RawMessage) error {
	var sched *audit.Scheduled
	return func(ctx context.Context, payload json.RawMessage) error {
		var in struct {
			Run string `json:"run"`
		}
		if len(payload) > 0 && json.Unmarshal(payload, &in) == nil && (in.Run == "audit" || in.Run == "audit_resume") {
			if sched == nil {
				s, err := NewScheduledAudit(ctx, env, cfg, logger, effects)
				if err != nil {
					logger.ErrorContext(ctx, "audit: boot failed", slog.String("error", err.Error()))
					return err
				}
				sched = s
			}
			if in.Run == "audit_resume" {
				_, _, err := sched.Resume(ctx)
				return err
			}
			_, err := sched.Run(ctx)
			return err
		}
		return rec.Handle(ctx, payload)
	}
}

// NewScheduledAudit builds the scheduled audit: NewAuditor's, with its
// checkpoint kept beside the reconciler's in the events table.
func NewScheduledAudit(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*audit.Scheduled, error) {
	a, err := NewAuditor(ctx, env, cfg, effects)
	if err != nil {
		return nil, err
	}
	r := boot.NewReader(env, cfg)
	c := r.Common()
	pages := r.Integer("AUDIT_MAX_PAGES", audit.DefaultMaxPages)
	if pages <= 0 {
		r.Fail(fmt.Errorf("AUDIT_MAX_PAGES=%d: want at least 1", pages))
	}
	if err := r.Err("audit"); err != nil {
		return nil, err
	}
	return &audit.Scheduled{
		Auditor:     a,
		Checkpoints: &store.Checkpoints{DB: dynamodb.NewFromConfig(cfg), Table: c.EventsTable},
		MaxPages:    pages,
		Logger:      logger,
	}, nil
}
