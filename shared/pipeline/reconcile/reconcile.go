package reconcile

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
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
	// GitHub and GitHubHooks, both set, turn on the redelivery of GitHub's
	// missed deliveries (github.go); unset, a run is Stripe's alone and its
	// log line is unchanged.
	GitHub      GitHub
	GitHubHooks []githubapi.Hook
	// GitHubMaxWait: a GitHub rate limit that lifts within this is waited
	// out; a longer one stops the sweep until a later run.
	GitHubMaxWait time.Duration
	// Redeliveries keeps the redeliveries owed to GitHub's failed
	// deliveries; required with GitHubHooks.
	Redeliveries Redeliveries
	// GitHubMaxRedeliveries bounds each hook's redeliveries per run.
	GitHubMaxRedeliveries int
	// GitHubRedeliveryBackoff is the wait after a delivery's first
	// redelivery before the next, doubled after each; GitHubMaxAsks
	// bounds the asks before a delivery is given up.
	GitHubRedeliveryBackoff time.Duration
	GitHubMaxAsks           int
	Logger                  *slog.Logger
	Now                     func() time.Time
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
	if (cfg.GitHub == nil) != (len(cfg.GitHubHooks) == 0) {
		missing = append(missing, "GitHub with GitHubHooks")
	}
	if len(cfg.GitHubHooks) > 0 && cfg.Redeliveries == nil {
		missing = append(missing, "Redeliveries with GitHubHooks")
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
	def(&cfg.GitHubMaxWait, DefaultGitHubMaxWait)
	if cfg.GitHubMaxRedeliveries <= 0 {
		cfg.GitHubMaxRedeliveries = DefaultGitHubMaxRedeliveries
	}
	def(&cfg.GitHubRedeliveryBackoff, DefaultGitHubRedeliveryBackoff)
	if cfg.GitHubMaxAsks <= 0 {
		cfg.GitHubMaxAsks = DefaultGitHubMaxAsks
	}
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

// Groups returns the groups of types the reconciler lists, in order: those
// of the platform and of Config.ConnectAccounts; a run adds those of the
// accounts it finds (Config.SeenAccounts, Config.ListAccounts).
func (r *Reconciler) Groups() []Group { return r.groups }

// AccountsCursor names the checkpoint that keeps, across runs, where the
// reading of provider's accounts seen resumes (its Cursor: the last
// account reached, "" for the first).
func AccountsCursor(provider string) string { return provider + "#accounts_cursor" }

// accounts returns the run's first groups: the configured ones, then
// those of every connected account listed at its start (the accounts seen
// come a page at a time: seenPage). A source that fails is noted in rn and
// leaves the others' accounts listed.
func (r *Reconciler) accounts(ctx context.Context, rn *run) []Group {
	if r.cfg.ListAccounts == nil {
		accounts := uniqueAccounts(r.cfg.ConnectAccounts)
		rn.res.Accounts = len(accounts)
		rn.known = accounts
		return r.groups
	}
	accounts := slices.Clone(r.cfg.ConnectAccounts)
	if r.cfg.ListAccounts != nil {
		listed, err := r.cfg.ListAccounts.ListAccounts(ctx)
		if err != nil {
			rn.accountErrs = append(rn.accountErrs, fmt.Errorf("reconcile: accounts listed: %w", err))
		}
		accounts = append(accounts, listed...)
	}
	rn.res.AccountFailures = len(rn.accountErrs)
	accounts = uniqueAccounts(accounts)
	rn.res.Accounts = len(accounts)
	rn.known = accounts
	return AccountGroups(r.cfg.Provider, r.cfg.Types, accounts)
}

// seenPage reads the next page of accounts seen from the run's cursor and
// returns the groups of those the run does not list already, with the
// accounts and next (the page's, "" when the list ended). ok is false when
// the page cannot be read (noted in rn).
func (rn *run) seenPage(ctx context.Context) (groups []Group, accounts []string, next string, ok bool) {
	r := rn.r
	accounts, next, err := r.cfg.SeenAccounts.Page(ctx, r.cfg.Provider, rn.cursor.Cursor, r.cfg.AccountsPage)
	if err != nil {
		rn.accountErrs = append(rn.accountErrs, fmt.Errorf("reconcile: accounts seen: %w", err))
		rn.res.AccountFailures = len(rn.accountErrs)
		return nil, nil, "", false
	}
	var fresh []string
	for _, a := range accounts {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(rn.known, a) {
			fresh = append(fresh, a)
		}
	}
	rn.res.Accounts += len(fresh)
	for _, g := range AccountGroups(r.cfg.Provider, r.cfg.Types, fresh) {
		if g.Account != "" {
			groups = append(groups, g)
		}
	}
	return groups, accounts, next, true
}

// uniqueAccounts returns accounts without blanks or repeats, in order.
func uniqueAccounts(accounts []string) []string {
	var out []string
	for _, a := range accounts {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// GitHubHooks returns the GitHub hooks whose deliveries a run sweeps.
func (r *Reconciler) GitHubHooks() []githubapi.Hook { return r.cfg.GitHubHooks }

// Why a run stopped before reconciling every group up to the present
// (Result.Stopped). Each is a clean stop: the checkpoint holds the last page
// fully handled and the next run resumes from it.
const (
	StopDeadline        = "deadline"         // its context's deadline was near
	StopMaxPages        = "max_pages"        // it used its page budget
	StopRateLimited     = "rate_limited"     // Stripe kept answering 429
	StopCheckpointMoved = "checkpoint_moved" // another run is at work
	StopCanceled        = "canceled"         // its context was canceled
	stopNone            = ""
)

// metricsFunction is the value of the metrics' function dimension.
const metricsFunction = "reconciler"

// RunOptions adjust one run.
type RunOptions struct {
	// Since, when positive, lists the events created in this last stretch
	// of time (at most Retention) instead of the checkpoint's window, and
	// leaves the checkpoints untouched: an operator's one-off sweep. It
	// lists nothing created before a group's start (its checkpoint's
	// Since) unless Backfill says so.
	Since time.Duration
	// Backfill, with Since, lists history too: events created before a
	// group's start. Those missing from the store are ingested with source
	// backfill, which the processor applies to the mirror without running
	// any effect (outcome backfilled), unless WithEffects. Missing events
	// created after the start are lost webhooks, ingested as any run
	// ingests them.
	Backfill bool
	// WithEffects ingests backfilled history with source reconciler, like
	// a lost webhook: the processor runs the team's effects for each.
	WithEffects bool
	// MaxPages, when positive, replaces Config.MaxPages for this run (an
	// operator's sweep may want more than a scheduled run's budget).
	MaxPages int
	// Progress, when set, is called after each page and after the stuck
	// records are re-enqueued, from the goroutine that called Run.
	Progress func(Progress)
}

// Progress reports a run under way.
type Progress struct {
	// Group is the index of the group being listed in Groups, of Groups.
	Group, Groups int
	// From and To bound the window being listed; Through is the creation
	// time of the oldest event handled in it so far (the listing goes
	// newest first).
	From, To, Through time.Time
	// Totals of the run so far.
	Pages, Listed, Missing, Backfilled, Stuck int
}

// Result is what a run did.
type Result struct {
	RunID string
	// Listed counts the events listed from the provider.
	Listed int
	// Missing counts the events ingested because the store had no record:
	// webhooks lost upstream.
	Missing int
	// Raced counts events missing from the store when looked up but stored
	// by a webhook before the reconciler could: not losses.
	Raced int
	// Backfilled counts the history events a backfill ingested (not lost
	// webhooks: they predate the group's start).
	Backfilled int
	// Stuck counts the unfinished records re-enqueued.
	Stuck int
	// Pages counts the pages listed (one request each).
	Pages int
	// Throttled counts 429 answers that made the run back off.
	Throttled int
	// Stopped says why the run stopped early (Stop*), "" when it reached the
	// present in every group.
	Stopped string
	// Deliveries counts the GitHub deliveries listed, GitHubPages the
	// requests that listed them.
	Deliveries, GitHubPages int
	// RedeliveriesScheduled counts the failed deliveries found that the
	// store does not hold whole (no record, or a record without the
	// payload it still needs), each now owed redeliveries.
	RedeliveriesScheduled int
	// Redelivered counts the redeliveries asked of GitHub. RedeliveryRefused
	// counts those GitHub refused (older than its three days).
	Redelivered, RedeliveryRefused int
	// RedeliveryBacklog counts the redeliveries due that a hook's budget
	// left for a later run: above zero run after run, redelivery cannot
	// keep up. RedeliveriesAbandoned counts the deliveries given up after
	// Config.GitHubMaxAsks asks. Rejected counts the failed deliveries the
	// receiver refused on purpose (a 4xx), not redelivered by a scheduled
	// run.
	RedeliveryBacklog, RedeliveriesAbandoned, Rejected int
	// GitHubThrottled counts GitHub's rate-limit answers (also in
	// Throttled).
	GitHubThrottled int
	// GitHubStopped says why the GitHub sweep stopped early (Stop*), ""
	// when it reached the present for every hook or is not configured.
	GitHubStopped string
	// CheckpointAge is how far behind the least advanced group's checkpoint
	// is at the end of the run: Retention for a group that never completed
	// a window. GitHubCheckpointAge is the same for the GitHub hooks
	// (githubapi.Retention for a hook that never completed one).
	CheckpointAge, GitHubCheckpointAge time.Duration
	Duration                           time.Duration
	// Accounts counts the connected accounts listed; AccountFailures the
	// sources of accounts (Config.SeenAccounts, Config.ListAccounts) that
	// failed this run, whose accounts wait for a later one.
	Accounts, AccountFailures int
}

// Input is the scheduled invocation's payload: EventBridge Scheduler
// delivers the schedule's Input, by default none or an empty object.
type Input struct {
	// Since, a Go duration like "24h", runs a one-off sweep (RunOptions).
	Since string `json:"since,omitempty"`
	// Backfill and WithEffects, with Since: RunOptions'.
	Backfill    bool `json:"backfill,omitempty"`
	WithEffects bool `json:"with_effects,omitempty"`
}

// Handle is the Lambda handler: one run per scheduled invocation. It
// returns an error only when the run failed, so the invocation is counted
// as an error; a run that stopped early to resume later is a success.
func (r *Reconciler) Handle(ctx context.Context, payload json.RawMessage) error {
	var in Input
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &in); err != nil {
			r.cfg.Logger.ErrorContext(ctx, "reconcile: bad input", slog.String("error", err.Error()))
			return fmt.Errorf("reconcile: decode input: %w", err)
		}
	}
	var opts RunOptions
	if in.Since != "" {
		d, err := time.ParseDuration(in.Since)
		if err != nil || d <= 0 {
			r.cfg.Logger.ErrorContext(ctx, "reconcile: bad input", slog.String("since", in.Since))
			return fmt.Errorf("reconcile: input since=%q is not a positive duration like 24h", in.Since)
		}
		opts.Since = d
	}
	if (in.Backfill || in.WithEffects) && opts.Since == 0 || in.WithEffects && !in.Backfill {
		r.cfg.Logger.ErrorContext(ctx, "reconcile: bad input", slog.Bool("backfill", in.Backfill), slog.Bool("with_effects", in.WithEffects))
		return errors.New("reconcile: input backfill needs since, and with_effects needs backfill")
	}
	opts.Backfill, opts.WithEffects = in.Backfill, in.WithEffects
	_, err := r.Run(ctx, opts)
	return err
}

// run is one run's state.
type run struct {
	r *Reconciler
	// groups are this run's: the configured ones and those of the
	// accounts found at its start (accounts).
	groups []Group
	// accountErrs are the failures to find the run's accounts.
	accountErrs []error
	// known are the accounts of groups (configured and listed); cursor is
	// where the reading of the accounts seen resumes (AccountsCursor).
	known  []string
	cursor store.Checkpoint
	opts   RunOptions
	res    Result
	stopAt time.Time // zero: no deadline
	// throttles counts 429s in a row.
	throttles int
	// oldest is the least advanced done_through over the groups.
	oldest   int64
	anyNever bool
	groupIdx int
	// groupLimit, when positive, is the page count at which the group
	// being listed has spent its share of the budget (do), and shareSpent
	// says it did.
	groupLimit int
	shareSpent bool
	// hookPages counts the pages of the hook being swept; githubHalt says
	// why the whole GitHub sweep stopped, if it did; githubOldest and
	// githubNever track the hooks' checkpoints, as oldest and anyNever
	// the groups'.
	hookPages  int
	githubHalt string
	// delivered holds the guids an attempt of which the receiver answered
	// 2xx, in this run's listings.
	delivered    map[string]bool
	githubOldest int64
	githubNever  bool
	progress     Progress
	startedAt    time.Time
	// started is the start this run set for a group reconciled for the
	// first time (Unix seconds), zero when none.
	started int64
	// deploymentStart is when the deployment's reconciliation started
	// (Unix seconds: the earliest start of the platform's groups), zero
	// before any: a connected account's groups start there, however late
	// the account is first listed, so history is decided once for the
	// deployment.
	deploymentStart int64
}

// Run reconciles once: it re-enqueues stuck records, then lists each group's
// window and ingests what is missing, until every group reaches the present
// or the run must stop (see Result.Stopped). It logs one line with the run's
// metrics. An error means the run could not go on (Stripe or AWS failed);
// whatever it finished before is kept and the next run resumes from there.
func (r *Reconciler) Run(ctx context.Context, opts RunOptions) (Result, error) {
	rn := &run{r: r, opts: opts, startedAt: r.cfg.Now(), delivered: map[string]bool{}}
	rn.res.RunID = newRunID()
	rn.groups = r.accounts(ctx, rn)
	rn.progress.Groups = len(rn.groups)
	if dl, ok := ctx.Deadline(); ok {
		rn.stopAt = dl.Add(-r.cfg.DeadlineMargin)
	}
	err := rn.do(ctx)
	// GitHub's sweep runs whatever became of Stripe's: one provider's
	// outage must not keep the other's deliveries from being repaired.
	if len(r.cfg.GitHubHooks) > 0 && ctx.Err() == nil {
		err = errors.Join(err, rn.github(ctx))
	}
	if err != nil && ctx.Err() != nil {
		// The context ended mid-call: nothing is half-written (a checkpoint
		// is written only after its page is fully handled), so this is a
		// stop like any other, not a failure.
		err = nil
		rn.res.Stopped = StopCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			rn.res.Stopped = StopDeadline
		}
	}
	now := r.cfg.Now()
	rn.res.Duration = now.Sub(rn.startedAt)
	switch {
	case rn.anyNever || rn.oldest == 0:
		rn.res.CheckpointAge = Retention
	default:
		rn.res.CheckpointAge = now.Sub(time.Unix(rn.oldest, 0))
	}
	switch {
	case len(r.cfg.GitHubHooks) == 0:
	case rn.githubNever || rn.githubOldest == 0:
		rn.res.GitHubCheckpointAge = githubapi.Retention
	default:
		rn.res.GitHubCheckpointAge = now.Sub(time.Unix(rn.githubOldest, 0))
	}
	r.report(ctx, rn, err)
	r.record(ctx, rn, err)
	return rn.res, err
}

func (rn *run) do(ctx context.Context) error {
	if err := rn.requeueStuck(ctx); err != nil {
		return err
	}
	if rn.r.cfg.SeenAccounts == nil {
		_, err := rn.pass(ctx, rn.groups)
		return err
	}
	return rn.seen(ctx)
}

// seen lists the run's groups with the first page of accounts seen, then
// the following pages while the budget lasts, and moves the cursor past
// the accounts reached.
func (rn *run) seen(ctx context.Context) error {
	cursor, err := rn.r.cfg.Checkpoints.Load(ctx, AccountsCursor(rn.r.cfg.Provider))
	if err != nil {
		return err
	}
	rn.cursor = cursor
	base := rn.groups
	for {
		page, accounts, next, ok := rn.seenPage(ctx)
		groups := append(slices.Clone(base), page...)
		rn.groups = append(rn.groups, page...)
		rn.progress.Groups = len(rn.groups)
		reached, err := rn.pass(ctx, groups)
		if err != nil || !ok {
			return err
		}
		// The cursor moves past the longest run of the page's accounts
		// whose every group had its turn.
		missed := map[string]bool{}
		for i, g := range groups {
			if g.Account != "" && !reached[i] {
				missed[g.Account] = true
			}
		}
		last, all := rn.cursor.Cursor, true
		for _, a := range accounts {
			if missed[a] {
				all = false
				break
			}
			last = a
		}
		if all && next == "" {
			last = "" // the list ended: the next run starts over
		}
		switch {
		case last == rn.cursor.Cursor:
		case rn.opts.Since > 0:
			// An operator's sweep leaves the checkpoints untouched.
			rn.cursor.Cursor = last
		default:
			saved, err := rn.save(ctx, rn.cursor, store.Checkpoint{Name: rn.cursor.Name, Cursor: last})
			if errors.Is(err, store.ErrCheckpointMoved) {
				rn.res.Stopped = StopCheckpointMoved
				return nil
			}
			if err != nil {
				return err
			}
			rn.cursor = saved
		}
		if !all || next == "" || !rn.mayContinue(ctx) {
			return nil
		}
		base = nil
	}
}

// pass lists groups: the least advanced first, each up to its share of
// the budget left, then what is left to those their share did not bring
// to the present. reached[i] says group i had its first turn.
func (rn *run) pass(ctx context.Context, groups []Group) (reached []bool, err error) {
	reached = make([]bool, len(groups))
	cps := make([]store.Checkpoint, len(groups))
	for i, g := range groups {
		cp, err := rn.r.LoadCheckpoint(ctx, g)
		if err != nil {
			return reached, err
		}
		cps[i] = cp
		if g.Account == "" && cp.Seq > 0 && cp.HistoryBefore > 0 && (rn.deploymentStart == 0 || cp.HistoryBefore < rn.deploymentStart) {
			rn.deploymentStart = cp.HistoryBefore
		}
	}
	defer func() {
		for _, cp := range cps {
			rn.track(cp)
		}
	}()
	// The page budget is shared fairly: the least advanced group first,
	// each up to its share, then what is left to those their share did not
	// bring to the present, in the same order. A backlog in one group
	// (thousands of events after an outage) cannot keep the others from
	// being listed run after run, as a fixed order with one shared budget
	// did.
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cps[a].DoneThrough, cps[b].DoneThrough) })
	share := max(1, (rn.maxPages()-rn.res.Pages)/max(len(groups), 1))
	// The groups are the last of the run's (Progress.Group).
	offset := len(rn.groups) - len(groups)
	behind := make([]bool, len(groups))
	for pass := range 2 {
		for _, i := range order {
			if pass == 1 && !behind[i] {
				continue
			}
			rn.groupLimit = 0
			if pass == 0 {
				rn.groupLimit = rn.res.Pages + share
			}
			if ctx.Err() != nil || !rn.mayContinue(ctx) {
				rn.groupLimit = 0
				return reached, nil
			}
			rn.groupIdx, rn.shareSpent = offset+i, false
			cp, err := rn.group(ctx, groups[i], cps[i])
			cps[i] = cp
			if err != nil {
				rn.groupLimit = 0
				return reached, err
			}
			reached[i] = true
			behind[i] = rn.shareSpent
		}
	}
	rn.groupLimit = 0
	return reached, nil
}

// track keeps the least advanced checkpoint for the run's checkpoint age.
func (rn *run) track(cp store.Checkpoint) {
	if cp.DoneThrough == 0 {
		rn.anyNever = true
		return
	}
	if rn.oldest == 0 || cp.DoneThrough < rn.oldest {
		rn.oldest = cp.DoneThrough
	}
}

// mayContinue reports whether the run may make another list request, and
// records why not.
func (rn *run) mayContinue(ctx context.Context) bool {
	switch {
	case rn.res.Stopped != stopNone:
		return false
	case ctx.Err() != nil:
		rn.res.Stopped = StopCanceled
	case !rn.stopAt.IsZero() && !rn.r.cfg.Now().Before(rn.stopAt):
		rn.res.Stopped = StopDeadline
	case rn.res.Pages >= rn.maxPages():
		rn.res.Stopped = StopMaxPages
	case rn.groupLimit > 0 && rn.res.Pages >= rn.groupLimit:
		// The group's share is spent, not the run's budget: the group
		// stops here (its checkpoint holds the cursor) and the run goes on.
		rn.shareSpent = true
	default:
		return true
	}
	return false
}

func (rn *run) maxPages() int {
	if rn.opts.MaxPages > 0 {
		return rn.opts.MaxPages
	}
	return rn.r.cfg.MaxPages
}

// save writes the checkpoint, or reports that another run moved it
// (store.ErrCheckpointMoved).
func (rn *run) save(ctx context.Context, prev, next store.Checkpoint) (store.Checkpoint, error) {
	next.UpdatedAt, next.RunID = rn.r.cfg.Now(), rn.res.RunID
	return rn.r.cfg.Checkpoints.Save(ctx, prev, next)
}

// LoadCheckpoint reads a group's checkpoint, strongly consistent; a group
// never reconciled has the zero Checkpoint (with its name and types).
func (r *Reconciler) LoadCheckpoint(ctx context.Context, g Group) (store.Checkpoint, error) {
	cp, err := r.cfg.Checkpoints.Load(ctx, g.Checkpoint)
	if err != nil {
		return store.Checkpoint{}, err
	}
	cp.Types = g.Types
	return cp, nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}
