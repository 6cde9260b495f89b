package reconcilerboot

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	auditpkg "github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// StripeAPI is how the reconciler and its audit reach Stripe's API.
type StripeAPI struct {
	// Key is the API key (STRIPE_API_KEY locally, else the SSM parameter
	// STRIPE_API_KEY_PARAMETER), read at the first run and kept; APIBase
	// is STRIPE_API_BASE (empty: Stripe's own).
	Key     *secrets.Secret
	APIBase string
	// RateLimit is in requests/s, shared by every account's listings
	// (RECONCILE_RATE_LIMIT), under Stripe's limit in the mode.
	RateLimit int
	// ConnectAccounts are a Connect platform's connected accounts
	// (STRIPE_CONNECT_ACCOUNTS), each listed with the Stripe-Account
	// header beside those the inbox has stored an event of;
	// ListAccounts (STRIPE_CONNECT_LIST_ACCOUNTS) lists every account the
	// platform lists too, read at the start of each run.
	ConnectAccounts []string
	ListAccounts    bool
}

// Config is the reconciler's configuration: what ConfigFromEnv reads from
// the environment the template gives the function, or what a caller in
// the same process (the CLI, the tools, the tests) builds.
type Config struct {
	boot.Common
	StripeAPI
	// EventTypes is Stripe's allowlist (EVENT_TYPES); nil: the default
	// (boot.HandledTypeList).
	EventTypes []string
	// See reconcile.Config: RECONCILE_OVERLAP, RECONCILE_SETTLE,
	// RECONCILE_SINCE or RECONCILE_RATE (firstLookback),
	// RECONCILE_STUCK_AFTER, RECONCILE_DEADLINE_MARGIN,
	// RECONCILE_MAX_PAGES, RECONCILE_MAX_STUCK.
	Overlap, Settle, FirstLookback, StuckAfter, DeadlineMargin time.Duration
	MaxPages, MaxStuck                                         int
	// StuckProviders are the providers whose stuck records the sweep
	// reads (RECONCILE_STUCK_PROVIDERS; none: every provider).
	StuckProviders []string
	// GitHub redelivers GitHub's missed deliveries; zero: off.
	GitHub GitHub
}

// GitHub is the GitHub part of the reconciler's configuration: the hooks
// (GITHUB_HOOKS: repo:OWNER/REPO/HOOK_ID, org:ORG/HOOK_ID, app:APP_ID; see
// githubapi.ParseHooks), a token for repository and organization hooks
// (GITHUB_API_TOKEN locally, else GITHUB_API_TOKEN_PARAMETER) and an App's
// private key for App hooks (GITHUB_APP_PRIVATE_KEY, else
// GITHUB_APP_PRIVATE_KEY_PARAMETER), each read at the first request that
// needs it; Base for a stand-in or GitHub Enterprise Server
// (GITHUB_API_BASE); MaxRedeliveries per hook and run
// (GITHUB_MAX_REDELIVERIES), Backoff the wait after a first redelivery,
// doubled after each (GITHUB_REDELIVERY_BACKOFF), and MaxAsks the asks
// before one is given up (GITHUB_REDELIVERY_ASKS).
type GitHub struct {
	Hooks           []githubapi.Hook
	Token, AppKey   func(context.Context) (string, error)
	Base            string
	MaxRedeliveries int
	Backoff         time.Duration
	MaxAsks         int
}

// AuditConfig is the configuration of the audit (NewAuditor), which runs
// through the reconciler function and shares its Stripe API.
type AuditConfig struct {
	boot.Common
	StripeAPI
	// Fields is the processor's field allowlist (MIRROR_KEEP_FIELDS).
	Fields *mirror.Fields
	// RunEffects (AUDIT_RUN_EFFECTS) makes each repair run the team's
	// effects, with Effects (EFFECT_SETTINGS, EFFECT_SECRETS,
	// EFFECT_SECRETS_PATH, as the processor reads them).
	RunEffects bool
	Effects    map[string]effect.Config
	// MaxPages bounds a scheduled run (AUDIT_MAX_PAGES).
	MaxPages int
}

// Stripe's request-rate limits per account, and the reconciler's default
// share of them: it leaves headroom for the team's own API calls.
const (
	StripeRateLimitTest = 25
	StripeRateLimitLive = 100
	reconcileRateTest   = 20
	reconcileRateLive   = 80
)

// ConfigFromEnv reads the reconciler's configuration from env, reporting
// every problem at once. Secrets held in SSM are read through cfg on
// first need, never now.
func ConfigFromEnv(env boot.Env, cfg aws.Config) (Config, error) {
	r := boot.NewReader(env, cfg)
	c := Config{Common: r.Common()}
	c.Overlap = r.Duration("RECONCILE_OVERLAP", reconcile.DefaultOverlap)
	c.Settle = r.Duration("RECONCILE_SETTLE", reconcile.DefaultSettle)
	c.FirstLookback = firstLookback(r)
	c.StuckAfter = r.Duration("RECONCILE_STUCK_AFTER", reconcile.DefaultStuckAfter)
	c.MaxPages = r.Integer("RECONCILE_MAX_PAGES", reconcile.DefaultMaxPages)
	c.MaxStuck = r.Integer("RECONCILE_MAX_STUCK", reconcile.DefaultMaxStuck)
	c.DeadlineMargin = r.Duration("RECONCILE_DEADLINE_MARGIN", reconcile.DefaultDeadlineMargin)
	c.EventTypes = r.EventTypes()
	// In the order the problems were always reported.
	connect := connectAccounts(r)
	c.StripeAPI = readStripeAPI(r, c.Livemode)
	c.ConnectAccounts = connect
	c.StuckProviders = stuckProviders(r)
	c.ListAccounts = listAccounts(r)
	c.GitHub = readGitHub(r)
	return c, r.Err("reconciler")
}

// Defaults is the reconciler's configuration with every default
// ConfigFromEnv takes, for a caller that builds its own: it must set the
// tables and queue (Common) and the key.
func Defaults() Config {
	c, _ := ConfigFromEnv(func(string) string { return "" }, aws.Config{})
	return c
}

// AuditConfigFromEnv reads the audit's configuration from env, reporting
// every problem at once; effects (the team's, nil for none) say which
// settings and secrets their configuration needs with AUDIT_RUN_EFFECTS.
func AuditConfigFromEnv(env boot.Env, cfg aws.Config, effects *effect.Registry) (AuditConfig, error) {
	r := boot.NewReader(env, cfg)
	c := AuditConfig{Common: r.Common()}
	c.StripeAPI = readStripeAPI(r, c.Livemode)
	var err error
	if c.Fields, err = mirror.ParseFields(r.MirrorKeepFields()); err != nil {
		r.Fail(fmt.Errorf("MIRROR_KEEP_FIELDS: %w", err))
	}
	c.RunEffects = r.Checked("AUDIT_RUN_EFFECTS", "false", boolean("AUDIT_RUN_EFFECTS")) == "true"
	if c.RunEffects && effects != nil {
		c.Effects = r.Effects(effects.Specs())
	}
	c.ListAccounts = listAccounts(r)
	c.ConnectAccounts = connectAccounts(r)
	c.MaxPages = r.Integer("AUDIT_MAX_PAGES", auditpkg.DefaultMaxPages)
	if c.MaxPages <= 0 {
		r.Fail(fmt.Errorf("AUDIT_MAX_PAGES=%d: want at least 1", c.MaxPages))
	}
	return c, r.Err("audit")
}

// readStripeAPI reads the key, base and rate limit of Stripe's API, which
// the reconciler and the audit share (the connected accounts are read
// apart); livemode sets the rate limit's default and ceiling.
func readStripeAPI(r *boot.Reader, livemode bool) StripeAPI {
	limit, ceiling := reconcileRateTest, StripeRateLimitTest
	if livemode {
		limit, ceiling = reconcileRateLive, StripeRateLimitLive
	}
	var s StripeAPI
	s.RateLimit = r.Integer("RECONCILE_RATE_LIMIT", limit)
	if s.RateLimit <= 0 || s.RateLimit >= ceiling {
		r.Fail(fmt.Errorf("RECONCILE_RATE_LIMIT=%d: want 1 to %d requests/s, under Stripe's limit in this mode", s.RateLimit, ceiling-1))
	}
	s.APIBase = r.StripeAPIBase(func(v string) error { _, err := stripeapi.BaseURL(v); return err })
	s.Key = r.StripeAPIKey(true)
	return s
}

// listAccounts reads STRIPE_CONNECT_LIST_ACCOUNTS.
func listAccounts(r *boot.Reader) bool {
	return r.Checked("STRIPE_CONNECT_LIST_ACCOUNTS", "false", boolean("STRIPE_CONNECT_LIST_ACCOUNTS")) == "true"
}

// boolean checks a variable that is "true" or "false".
func boolean(key string) func(string) error {
	return func(v string) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("%s=%q: want true or false", key, v)
		}
		return nil
	}
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

// readGitHub reads GITHUB_HOOKS and the credentials its hooks need: a
// token only for repository and organization hooks, an App's key only for
// App hooks, so a deployment holds no credential it does not use.
func readGitHub(r *boot.Reader) GitHub {
	var g GitHub
	var err error
	spec := r.Optional("GITHUB_HOOKS", "")
	if g.Hooks, err = githubapi.ParseHooks(spec); err != nil {
		r.Fail(fmt.Errorf("GITHUB_HOOKS: %w", err))
		return g
	}
	if len(g.Hooks) == 0 {
		return g
	}
	var tokenHooks, appHooks bool
	for _, h := range g.Hooks {
		tokenHooks = tokenHooks || h.Kind != githubapi.KindApp
		appHooks = appHooks || h.Kind == githubapi.KindApp
	}
	if tokenHooks {
		if s := r.Secret("GITHUB_API_TOKEN", true); s != nil {
			g.Token = s.Value
		}
	}
	if appHooks {
		if s := r.Secret("GITHUB_APP_PRIVATE_KEY", true); s != nil {
			g.AppKey = s.Value
		}
	}
	g.Base = r.Checked("GITHUB_API_BASE", "", func(v string) error {
		if v == "" {
			return nil
		}
		_, err := githubapi.New(githubapi.Config{BaseURL: v})
		return err
	})
	g.MaxRedeliveries = r.Integer("GITHUB_MAX_REDELIVERIES", redeliver.DefaultMaxRedeliveries)
	g.Backoff = r.Duration("GITHUB_REDELIVERY_BACKOFF", redeliver.DefaultRedeliveryBackoff)
	g.MaxAsks = r.Integer("GITHUB_REDELIVERY_ASKS", redeliver.DefaultMaxAsks)
	return g
}

// FromEnv is ConfigFromEnv then New: the reconciler as Lambda builds it
// from the environment env, for a harness that derives that environment
// from the template (the local stack, the failure-point runs).
func FromEnv(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*reconcile.Reconciler, error) {
	c, err := ConfigFromEnv(env, cfg)
	if err != nil {
		return nil, err
	}
	return New(ctx, c, cfg, logger, effects)
}

// AuditFromEnv returns the audit's configuration reader of env, for
// Handler: AuditConfigFromEnv at the audit's first run.
func AuditFromEnv(env boot.Env, cfg aws.Config, effects *effect.Registry) func() (AuditConfig, error) {
	return func() (AuditConfig, error) { return AuditConfigFromEnv(env, cfg, effects) }
}

// AuditorFromEnv is AuditConfigFromEnv then NewAuditor, for a caller that
// rebuilds the deployed reconciler's environment (inboxctl audit).
func AuditorFromEnv(ctx context.Context, env boot.Env, cfg aws.Config, effects *effect.Registry) (*auditpkg.Auditor, error) {
	c, err := AuditConfigFromEnv(env, cfg, effects)
	if err != nil {
		return nil, err
	}
	return NewAuditor(ctx, c, cfg, effects)
}
