package reconcile

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// Lister lists the provider's events; *stripeapi.Client implements it.
type Lister interface {
	ListEvents(ctx context.Context, q stripeapi.EventQuery, page func(stripeapi.Page) (bool, error)) error
}

// Events is what the reconciler asks of the events table; *store.Events
// implements it.
type Events interface {
	// Existing returns the ids among ids that have a record.
	Existing(ctx context.Context, provider string, ids []string) (map[string]bool, error)
	// Held returns what the store holds of each of ids: its record's
	// status and whether its payload is stored.
	Held(ctx context.Context, provider string, ids []string) (map[string]store.Held, error)
	// Stuck yields the unfinished records whose last transition is older
	// than before, oldest first, at most limit of them.
	Stuck(ctx context.Context, provider string, before time.Time, limit int) iter.Seq2[event.Record, error]
}

// Checkpoints keeps each group's progress; *store.Checkpoints implements
// it. Save is conditioned on the checkpoint being as prev was read, and
// fails with store.ErrCheckpointMoved when another run wrote it since.
type Checkpoints interface {
	Load(ctx context.Context, name string) (store.Checkpoint, error)
	Save(ctx context.Context, prev, next store.Checkpoint) (store.Checkpoint, error)
}

// Ingester puts a missing event into the pipeline; *ingest.Ingester, the
// receiver's own, implements it.
type Ingester interface {
	Ingest(ctx context.Context, env event.Envelope, payload []byte, source event.Source) (ingest.Result, error)
}

// SeenAccounts returns the connected accounts the inbox has stored an
// event of, a page at a time; *store.Accounts implements it.
type SeenAccounts interface {
	// Page returns the accounts after after (from the first when ""),
	// ascending, at most limit, and the after of the next page, "" when
	// the list ended.
	Page(ctx context.Context, provider, after string, limit int) (accounts []string, next string, err error)
}

// AccountLister lists every connected account of the platform;
// *stripeapi.Client implements it.
type AccountLister interface {
	ListAccounts(ctx context.Context) ([]string, error)
}

// Runs keeps the last runs for operators (the console's reconciler page);
// *store.Runs implements it.
type Runs interface {
	Record(ctx context.Context, provider string, run store.Run) error
}

// Queue re-enqueues stuck records; *queue.Queue implements it.
type Queue interface {
	Send(ctx context.Context, p event.Pointer) error
}

// Retention is how long Stripe keeps events: a listing never asks for older
// ones.
const Retention = 30 * 24 * time.Hour

// retentionMargin keeps the oldest bound a little inside the retention, so
// a request never names a time Stripe is deleting events at.
const retentionMargin = time.Minute

// DefaultOverlap is how far below its checkpoint a window starts. Stripe
// lists an event within seconds of its creation, and a window already ends
// DefaultSettle (5 minutes) before the run, so an event missing from one
// run's list is one that appeared more than 5 minutes late; the overlap
// lists the last 2 minutes of the previous window again for those. Each
// run compares (period + overlap) / period windows' worth of events: 1.2
// per event at the template's rate(10 minutes), where an hour's overlap
// compared each event 7 times for nothing.
const DefaultOverlap = 2 * time.Minute

// DefaultFirstLookback is Config.FirstLookback when none is given: the
// template's default schedule, rate(10 minutes).
const DefaultFirstLookback = 10 * time.Minute

// Defaults for Config.
const (
	DefaultStuckAfter      = 15 * time.Minute
	DefaultSettle          = 5 * time.Minute
	DefaultMaxPages        = 50
	DefaultMaxStuck        = 1000
	DefaultDeadlineMargin  = 20 * time.Second
	DefaultThrottleBackoff = time.Second
	DefaultMaxThrottles    = 5
	DefaultAccountsPage    = 50
)

// Config configures a Reconciler. Stripe, Events, Checkpoints, Ingester,
// Queue and Types are required; zero durations and counts take the
// defaults.
type Config struct {
	Stripe      Lister
	Events      Events
	Checkpoints Checkpoints
	Ingester    Ingester
	Queue       Queue
	// Provider names the provider in keys; event.ProviderStripe when empty.
	Provider string
	// Types are the handled event types, the receiver's allowlist: only
	// these are listed.
	Types []string
	// ConnectAccounts are the connected accounts (Stripe Connect) whose
	// events are listed too, each with the platform's key and its
	// Stripe-Account header, each group with a checkpoint of its own
	// (AccountGroups), sharing the run's page budget and the client's rate
	// limit with the platform's groups, least advanced first.
	ConnectAccounts []string
	// SeenAccounts, when set, adds the connected accounts the inbox has
	// stored an event of; ListAccounts, when set, every account the
	// platform lists (Stripe's account list), read at the start of each
	// run. The accounts seen may be a million: a run reads them
	// AccountsPage at a time, in order, from the cursor the last run
	// left (a checkpoint of its own, AccountsCursor), and lists each
	// page's accounts while its budget lasts (pages, deadline); the
	// cursor moves past the accounts whose every group had its turn, and
	// back to the first account once a run reaches the last, so
	// successive runs reach every account in turn. The first page's
	// accounts share the budget with the platform's and the configured
	// and listed accounts' groups. A failure of either source is logged
	// and counted (Result.AccountFailures) and the run goes on with the
	// accounts it knows. An account first listed late starts where the
	// deployment's reconciliation started, as every account does: what
	// came before is history.
	SeenAccounts SeenAccounts
	ListAccounts AccountLister
	// AccountsPage is how many accounts seen a run reads at a time;
	// DefaultAccountsPage when zero.
	AccountsPage int
	// Livemode is the mode this deployment serves; listing events of the
	// other mode (the wrong API key) fails the run.
	Livemode bool
	// Overlap is listed again below the checkpoint each window, for events
	// that appear in the list a little after their creation time.
	Overlap time.Duration
	// Settle leaves out events younger than this: their webhook may still
	// be on its way, and ingesting them would report a loss that is not.
	Settle time.Duration
	// FirstLookback is how far before its own start a group's first run
	// (no checkpoint yet) sets the group's start, the checkpoint's Since:
	// events created earlier are history, listed only by a backfill
	// (RunOptions.Backfill). One schedule period (SchedulePeriod of the
	// reconciler's rate) covers the stretch between the deployment and
	// its first scheduled run; DefaultFirstLookback when zero, at most
	// Retention.
	FirstLookback time.Duration
	// StuckAfter is how long a record may stay unfinished since its last
	// transition before it is re-enqueued.
	StuckAfter time.Duration
	// StuckProviders are the providers whose stuck records a run sends
	// again, event.Providers when empty: a GitHub delivery stored but not
	// enqueued is never sent again by GitHub, so only this sweep finds it.
	StuckProviders []string
	// MaxPages bounds the list requests answered per run, over all groups.
	MaxPages int
	// MaxStuck bounds the records re-enqueued per run.
	MaxStuck int
	// DeadlineMargin: a run stops starting new pages this long before its
	// context's deadline (the Lambda timeout), so it always ends cleanly.
	DeadlineMargin time.Duration
	// ThrottleBackoff is the first wait after a 429; it doubles with each
	// 429 in a row, and after MaxThrottles in a row the run stops.
	ThrottleBackoff time.Duration
	MaxThrottles    int
	// Redeliverer, when set, gives GitHub's redelivery (package
	// redeliver) its turn after Stripe's groups in each run; unset, a run
	// is Stripe's alone and its log line is unchanged.
	Redeliverer *redeliver.Redeliverer
	Logger      *slog.Logger
	Now         func() time.Time
	// Runs, when set, keeps each run's result where operators read it;
	// the log line is written either way.
	Runs Runs
}

// Reconciler runs reconciliations.
type Reconciler struct {
	cfg    Config
	groups []Group
}

// New returns a Reconciler; zero fields of cfg take their defaults.
func New(cfg Config) (*Reconciler, error) {
	var missing []string
	if cfg.Stripe == nil {
		missing = append(missing, "Stripe")
	}
	if cfg.Events == nil {
		missing = append(missing, "Events")
	}
	if cfg.Checkpoints == nil {
		missing = append(missing, "Checkpoints")
	}
	if cfg.Ingester == nil {
		missing = append(missing, "Ingester")
	}
	if cfg.Queue == nil {
		missing = append(missing, "Queue")
	}
	if cfg.Provider == "" {
		cfg.Provider = event.ProviderStripe
	}
	if len(cfg.StuckProviders) == 0 {
		cfg.StuckProviders = event.Providers
	}
	groups := AccountGroups(cfg.Provider, cfg.Types, cfg.ConnectAccounts)
	if len(groups) == 0 {
		missing = append(missing, "Types")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("reconcile: config without %s", strings.Join(missing, ", "))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Overlap, DefaultOverlap)
	def(&cfg.Settle, DefaultSettle)
	def(&cfg.FirstLookback, DefaultFirstLookback)
	def(&cfg.StuckAfter, DefaultStuckAfter)
	def(&cfg.DeadlineMargin, DefaultDeadlineMargin)
	def(&cfg.ThrottleBackoff, DefaultThrottleBackoff)
	cfg.FirstLookback = min(cfg.FirstLookback, Retention-retentionMargin)
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = DefaultMaxPages
	}
	if cfg.MaxStuck <= 0 {
		cfg.MaxStuck = DefaultMaxStuck
	}
	if cfg.MaxThrottles <= 0 {
		cfg.MaxThrottles = DefaultMaxThrottles
	}
	if cfg.AccountsPage <= 0 {
		cfg.AccountsPage = DefaultAccountsPage
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Reconciler{cfg: cfg, groups: groups}, nil
}
