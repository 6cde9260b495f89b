package reconcilerboot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	auditpkg "github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// New builds the reconciler's handler from c (ConfigFromEnv in Lambda).
// effects are the team's effects (hooks.Registry()); the reconciler reads
// only their event types, which it lists beside the mirror's
// (boot.HandledTypeList). Without GitHub hooks (c.GitHub.Hooks) the
// reconciler is Stripe's alone.
func New(ctx context.Context, c Config, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*reconcile.Reconciler, error) {
	rc := reconcile.Config{
		Overlap:        c.Overlap,
		Settle:         c.Settle,
		FirstLookback:  c.FirstLookback,
		StuckAfter:     c.StuckAfter,
		MaxPages:       c.MaxPages,
		MaxStuck:       c.MaxStuck,
		DeadlineMargin: c.DeadlineMargin,
		Types:          boot.HandledTypeList(c.EventTypes, effects),
		// A Connect platform's connected accounts, listed with the
		// Stripe-Account header, each with checkpoints of its own.
		ConnectAccounts: c.ConnectAccounts,
		StuckProviders:  c.StuckProviders,
		Livemode:        c.Livemode,
		Provider:        event.ProviderStripe,
		Logger:          logger,
	}
	var err error
	var ghc *githubapi.Client
	if len(c.GitHub.Hooks) > 0 {
		gh := c.GitHub
		ghc, err = githubapi.New(githubapi.Config{Token: gh.Token, AppKey: gh.AppKey, BaseURL: gh.Base})
		if err != nil {
			return nil, fmt.Errorf("boot reconciler: %w", err)
		}
	}
	client, err := newLister(c.Key, c.APIBase, c.RateLimit)
	if err != nil {
		return nil, fmt.Errorf("boot reconciler: %w", err)
	}
	rc.Stripe = client
	if c.ListAccounts {
		rc.ListAccounts = client
	}
	in := boot.NewIngester(cfg, c.Common, boot.HandledTypes(c.EventTypes, effects))
	rc.Ingester = in
	rc.Queue = in.Queue
	db := dynamodb.NewFromConfig(cfg)
	rc.Events = c.Events(db)
	rc.Checkpoints = &store.Checkpoints{DB: db, Table: c.EventsTable}
	rc.Runs = &store.Runs{DB: db, Table: c.EventsTable}
	// The connected accounts the inbox has stored an event of (the
	// ingest path records each), listed without being configured.
	rc.SeenAccounts = &store.Accounts{DB: db, Table: c.EventsTable}
	if gh := c.GitHub; len(gh.Hooks) > 0 {
		rc.Redeliverer, err = redeliver.New(redeliver.Config{GitHub: ghc, Hooks: gh.Hooks, Events: rc.Events, Checkpoints: rc.Checkpoints,
			Redeliveries:    &store.Redeliveries{DB: db, Table: c.EventsTable, Keep: githubapi.Retention},
			MaxRedeliveries: gh.MaxRedeliveries, RedeliveryBackoff: gh.Backoff, MaxAsks: gh.MaxAsks})
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

// NewAuditor builds the audit of the mirror against Stripe's API
// (package audit) from the audit's configuration (AuditConfigFromEnv):
// the reconciler's Stripe API key (read access to subscriptions), API base
// and rate limit, and the mirror table with the processor's field
// allowlist. Each run is kept in the events table's audit runs
// (store.Runs), for the console and inboxctl status.
//
// With c.RunEffects each repair runs the team's effects (effects, built
// with c.Effects as the processor builds them), as an event applying the
// object would (audit.RepairEvent); otherwise a repair runs none.
func NewAuditor(ctx context.Context, c AuditConfig, cfg aws.Config, effects *effect.Registry) (*auditpkg.Auditor, error) {
	api, err := newLister(c.Key, c.APIBase, c.RateLimit)
	if err != nil {
		return nil, fmt.Errorf("boot audit: %w", err)
	}
	db := dynamodb.NewFromConfig(cfg)
	a := &auditpkg.Auditor{
		API:      api,
		Mirror:   &mirror.Mirror{Table: c.MirrorTable, Fields: c.Fields, TiesByAPI: true},
		Reader:   &mirror.Reader{DB: db, Table: c.MirrorTable},
		DB:       db,
		Scan:     db,
		Runs:     &store.Runs{DB: db, Table: c.EventsTable},
		Provider: event.ProviderStripe,
		// Every account the reconciler lists events of is audited too,
		// under its own keys.
		ConnectAccounts: c.ConnectAccounts,
		SeenAccounts:    &store.Accounts{DB: db, Table: c.EventsTable},
	}
	if c.ListAccounts {
		a.ListAccounts = api
	}
	if c.RunEffects && effects != nil {
		built, err := effects.Build(c.Effects)
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
// progress (AuditConfig.MaxPages bounds a run), any other the
// reconciliation (reconcile.Input). The audit is built at its first run,
// from what audit returns (AuditConfigFromEnv in Lambda), so a reconciler
// that never audits never reads its configuration.
// effects are the team's, run by the audit's repairs only with
// AuditConfig.RunEffects (NewAuditor).
func Handler(audit func() (AuditConfig, error), cfg aws.Config, logger *slog.Logger, rec *reconcile.Reconciler, effects *effect.Registry) func(context.Context, json.RawMessage) error {
	var sched *auditpkg.Scheduled
	return func(ctx context.Context, payload json.RawMessage) error {
		var in struct {
			Run string `json:"run"`
		}
		if len(payload) > 0 && json.Unmarshal(payload, &in) == nil && (in.Run == "audit" || in.Run == "audit_resume") {
			if sched == nil {
				s, err := scheduledAudit(ctx, audit, cfg, logger, effects)
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

// scheduledAudit reads the audit's configuration and builds its
// scheduled audit.
func scheduledAudit(ctx context.Context, audit func() (AuditConfig, error), cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*auditpkg.Scheduled, error) {
	c, err := audit()
	if err != nil {
		return nil, err
	}
	return NewScheduledAudit(ctx, c, cfg, logger, effects)
}

// NewScheduledAudit builds the scheduled audit: NewAuditor's, with its
// checkpoint kept beside the reconciler's in the events table.
func NewScheduledAudit(ctx context.Context, c AuditConfig, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*auditpkg.Scheduled, error) {
	a, err := NewAuditor(ctx, c, cfg, effects)
	if err != nil {
		return nil, err
	}
	return &auditpkg.Scheduled{
		Auditor:     a,
		Checkpoints: &store.Checkpoints{DB: dynamodb.NewFromConfig(cfg), Table: c.EventsTable},
		MaxPages:    c.MaxPages,
		Logger:      logger,
	}, nil
}
