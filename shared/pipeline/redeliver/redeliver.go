package redeliver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// GitHub is GitHub's webhook deliveries API; *githubapi.Client implements
// it.
type GitHub interface {
	// Deliveries lists one page of a hook's deliveries, newest first.
	Deliveries(ctx context.Context, h githubapi.Hook, cursor string) (githubapi.Page, error)
	// Redeliver asks GitHub to send a delivery again.
	Redeliver(ctx context.Context, h githubapi.Hook, id int64) error
}

// Redeliveries keeps the redeliveries a run owes GitHub's failed
// deliveries; *store.Redeliveries implements it.
type Redeliveries interface {
	// Schedule records a redelivery unless its event has one already.
	Schedule(ctx context.Context, d store.Redelivery) (bool, error)
	// Due returns the redeliveries due by now, soonest first.
	Due(ctx context.Context, provider string, now time.Time, limit int) ([]store.Redelivery, error)
	// Asked records an ask, the next due at next; store.ErrRedeliveryMoved
	// when another run recorded one since d was read.
	Asked(ctx context.Context, d store.Redelivery, next time.Time) (store.Redelivery, error)
	// Done ends a redelivery's schedule.
	Done(ctx context.Context, d store.Redelivery) error
}

// Events is what the sweep asks of the events table; *store.Events
// implements it.
type Events interface {
	// Held returns what the store holds of each of ids: its record's
	// status and whether its payload is stored.
	Held(ctx context.Context, provider string, ids []string) (map[string]store.Held, error)
}

// Checkpoints keeps each hook's progress; *store.Checkpoints implements
// it. Save is conditioned on the checkpoint being as prev was read, and
// fails with store.ErrCheckpointMoved when another run wrote it since.
type Checkpoints interface {
	Load(ctx context.Context, name string) (store.Checkpoint, error)
	Save(ctx context.Context, prev, next store.Checkpoint) (store.Checkpoint, error)
}

// ProviderGitHub names GitHub in keys: records are github#<delivery guid>.
const ProviderGitHub = "github"

// Defaults for Config.
const (
	// DefaultMaxWait: GitHub's primary limit resets hourly, so a wait
	// longer than a minute is left to a later run.
	DefaultMaxWait = time.Minute
	// DefaultMaxRedeliveries bounds each hook's redeliveries per run,
	// under GitHub's secondary limit on writes (80 a minute) with room for
	// the team's own.
	DefaultMaxRedeliveries = 50
	// DefaultRedeliveryBackoff is the wait after a delivery's first
	// redelivery before it is asked for again, doubling with each ask: one
	// period of the template's schedule.
	DefaultRedeliveryBackoff = 10 * time.Minute
	// DefaultMaxAsks: a delivery asked for 8 times (over 42 hours at the
	// default backoff, inside GitHub's three days) that still left no whole
	// record is given up, counted, and alarmed on.
	DefaultMaxAsks = 8
)

// StopMaxRedeliveries: a hook's redeliveries due outnumbered its budget
// (Config.MaxRedeliveries); the rest are due for the next run, and
// counted (Result.Backlog). The sweep's other stop reasons are the run's
// (outcome.Stop*).
const StopMaxRedeliveries = "max_redeliveries"

// retentionMargin keeps the oldest bound a little inside GitHub's
// retention, so a window never starts at deliveries GitHub is deleting.
const retentionMargin = time.Minute

// Config configures a Redeliverer. GitHub, Hooks, Events, Checkpoints and
// Redeliveries are required; zero counts and durations take the defaults.
type Config struct {
	GitHub GitHub
	// Hooks are the hooks whose deliveries are swept (repository,
	// organization or GitHub App hooks).
	Hooks        []githubapi.Hook
	Events       Events
	Checkpoints  Checkpoints
	Redeliveries Redeliveries
	// MaxWait: a GitHub rate limit that lifts within this is waited out;
	// a longer one stops the sweep until a later run.
	MaxWait time.Duration
	// MaxRedeliveries bounds each hook's redeliveries per run.
	MaxRedeliveries int
	// RedeliveryBackoff is the wait after a delivery's first redelivery
	// before the next, doubled after each; MaxAsks bounds the asks before
	// a delivery is given up.
	RedeliveryBackoff time.Duration
	MaxAsks           int
}

// Redeliverer sweeps GitHub's hooks and asks for the redeliveries due.
// A reconciler run gives it its turn (reconcile.Config.Redeliverer).
type Redeliverer struct {
	cfg Config
}

// New returns a Redeliverer; zero fields of cfg take their defaults.
func New(cfg Config) (*Redeliverer, error) {
	var missing []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"GitHub", cfg.GitHub != nil}, {"Hooks", len(cfg.Hooks) > 0}, {"Events", cfg.Events != nil},
		{"Checkpoints", cfg.Checkpoints != nil}, {"Redeliveries", cfg.Redeliveries != nil},
	} {
		if !f.ok {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("redeliver: config without %s", strings.Join(missing, ", "))
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.MaxRedeliveries <= 0 {
		cfg.MaxRedeliveries = DefaultMaxRedeliveries
	}
	if cfg.RedeliveryBackoff <= 0 {
		cfg.RedeliveryBackoff = DefaultRedeliveryBackoff
	}
	if cfg.MaxAsks <= 0 {
		cfg.MaxAsks = DefaultMaxAsks
	}
	return &Redeliverer{cfg: cfg}, nil
}

// Hooks returns the hooks whose deliveries a sweep lists.
func (r *Redeliverer) Hooks() []githubapi.Hook { return r.cfg.Hooks }

// Turn is what a reconciler run shares with its GitHub sweep: its id,
// clock and logger (both required), its deadline, its operator's options
// and the settings both providers' windows follow.
type Turn struct {
	RunID  string
	Now    func() time.Time
	Logger *slog.Logger
	// StopAt is when the run stops starting requests; zero: no deadline.
	StopAt time.Time
	// Since, when positive, sweeps this last stretch instead of the
	// checkpoint's window and leaves the checkpoints untouched: an
	// operator's sweep, which schedules the deliveries the receiver
	// refused on purpose too.
	Since time.Duration
	// MaxPages bounds each hook's list requests.
	MaxPages int
	// Overlap, Settle and FirstLookback bound a hook's window as they
	// bound a Stripe group's (reconcile.Config).
	Overlap, Settle, FirstLookback time.Duration
	// MaxThrottles: after this many rate-limit answers in a row the sweep
	// stops; Throttles is how many the run met in a row before its turn.
	MaxThrottles, Throttles int
}

// Result is what a sweep did.
type Result struct {
	// Deliveries counts the deliveries listed, Pages the requests that
	// listed them.
	Deliveries, Pages int
	// Scheduled counts the failed deliveries found that the store does
	// not hold whole (no record, or a record without the payload it still
	// needs), each now owed redeliveries.
	Scheduled int
	// Redelivered counts the redeliveries asked of GitHub. Refused counts
	// those GitHub refused (older than its three days).
	Redelivered, Refused int
	// Backlog counts the redeliveries due that a hook's budget left for a
	// later run: above zero run after run, redelivery cannot keep up.
	// Abandoned counts the deliveries given up after Config.MaxAsks asks.
	// Rejected counts the failed deliveries the receiver refused on
	// purpose (a 4xx), not redelivered by a scheduled run.
	Backlog, Abandoned, Rejected int
	// Throttled counts GitHub's rate-limit answers; Throttles those in a
	// row at the sweep's end.
	Throttled, Throttles int
	// Stopped says why the sweep stopped early (outcome.Stop*,
	// StopMaxRedeliveries), "" when it reached the present for every hook.
	Stopped string
	// CheckpointAge is how far behind the least advanced hook's checkpoint
	// is at the end of the sweep (githubapi.Retention for a hook that never
	// completed a window).
	CheckpointAge time.Duration
}

// sweep is one sweep's state.
type sweep struct {
	r    *Redeliverer
	turn Turn
	res  Result
	// hookPages counts the pages of the hook being swept; halt says why
	// the whole sweep stopped, if it did.
	hookPages int
	halt      string
	// delivered holds the guids an attempt of which the receiver answered
	// 2xx, in this sweep's listings.
	delivered map[string]bool
	// oldest and never track the hooks' checkpoints.
	oldest int64
	never  bool
}

// Sweep sweeps each hook, then asks for the redeliveries due. A reconciler
// run calls it after Stripe's groups, whatever became of them, with page
// budgets and stop reasons of its own (Result.Stopped): a Stripe backlog or
// a Stripe rate limit does not keep GitHub's deliveries from being
// repaired, and the other way round. One hook's error or budget does not
// keep the next from its turn. A context already ended sweeps nothing.
func (r *Redeliverer) Sweep(ctx context.Context, turn Turn) (Result, error) {
	if ctx.Err() != nil {
		return Result{CheckpointAge: githubapi.Retention}, nil
	}
	sw := &sweep{r: r, turn: turn, delivered: map[string]bool{}}
	sw.res.Throttles = turn.Throttles
	var errs []error
	for _, h := range r.cfg.Hooks {
		if !sw.mayContinue(ctx) {
			break
		}
		if err := sw.sweepHook(ctx, h); err != nil {
			errs = append(errs, err)
		}
	}
	if sw.mayContinue(ctx) {
		if err := sw.redeliver(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	sw.res.CheckpointAge = githubapi.Retention
	if !sw.never && sw.oldest != 0 {
		sw.res.CheckpointAge = turn.Now().Sub(time.Unix(sw.oldest, 0))
	}
	return sw.res, errors.Join(errs...)
}

// sweepHook loads a hook's checkpoint, sweeps the hook and tracks the
// checkpoint it leaves.
func (sw *sweep) sweepHook(ctx context.Context, h githubapi.Hook) error {
	sw.hookPages = 0
	name := checkpointName(h)
	cp, err := sw.r.cfg.Checkpoints.Load(ctx, name)
	if err != nil {
		return err
	}
	cp.Name = name
	cp, err = sw.hook(ctx, h, cp)
	sw.track(cp)
	return err
}

// checkpointName names a hook's checkpoint.
func checkpointName(h githubapi.Hook) string { return ProviderGitHub + "#" + h.String() }

// dueRead bounds the redeliveries one sweep reads: four runs' budget of
// every hook, so a backlog stays counted.
func (r *Redeliverer) dueRead() int {
	return min(1000, 4*r.cfg.MaxRedeliveries*max(len(r.cfg.Hooks), 1))
}

// track keeps the least advanced hook's checkpoint.
func (sw *sweep) track(cp store.Checkpoint) {
	if cp.DoneThrough == 0 {
		sw.never = true
		return
	}
	if sw.oldest == 0 || cp.DoneThrough < sw.oldest {
		sw.oldest = cp.DoneThrough
	}
}

// stop records why the sweep, or a hook's part of it, stopped early: the
// first reason is the sweep's.
func (sw *sweep) stop(reason string) {
	if sw.res.Stopped == "" {
		sw.res.Stopped = reason
	}
}

// mayContinue reports whether the sweep may make another request at all,
// and records why not: a rate limit, the deadline, the context's end.
func (sw *sweep) mayContinue(ctx context.Context) bool {
	switch {
	case sw.halt != "":
		return false
	case ctx.Err() != nil:
		sw.halt = outcome.StopCanceled
	case !sw.turn.StopAt.IsZero() && !sw.turn.Now().Before(sw.turn.StopAt):
		sw.halt = outcome.StopDeadline
	default:
		return true
	}
	sw.stop(sw.halt)
	return false
}

// hookMayContinue reports whether the hook being swept may list another
// page: the sweep may go on and the hook's page budget is not spent.
func (sw *sweep) hookMayContinue(ctx context.Context) bool {
	if !sw.mayContinue(ctx) {
		return false
	}
	if sw.hookPages >= sw.turn.MaxPages {
		sw.stop(outcome.StopMaxPages)
		return false
	}
	return true
}

// save writes a hook's checkpoint, or reports that another run moved it
// (store.ErrCheckpointMoved).
func (sw *sweep) save(ctx context.Context, prev, next store.Checkpoint) (store.Checkpoint, error) {
	next.UpdatedAt, next.RunID = sw.turn.Now(), sw.turn.RunID
	return sw.r.cfg.Checkpoints.Save(ctx, prev, next)
}

// throttled handles a rate-limit answer: it waits until GitHub's reset
// when that is near enough and reports true (ask again), or records a
// clean stop and reports false. Any other error reports false.
func (sw *sweep) throttled(ctx context.Context, h githubapi.Hook, err error) bool {
	rl, ok := githubapi.RateLimited(err)
	if !ok {
		return false
	}
	sw.res.Throttled++
	sw.res.Throttles++
	now := sw.turn.Now()
	wait := max(rl.Until.Sub(now), 0)
	attrs := []any{slog.String("run_id", sw.turn.RunID), slog.String("hook", h.String()), slog.Int("status", rl.Status),
		slog.Time("until", rl.Until), slog.Duration("wait", wait), slog.Int("in_a_row", sw.res.Throttles)}
	switch {
	case wait > sw.r.cfg.MaxWait, sw.res.Throttles >= sw.turn.MaxThrottles:
		sw.halt = outcome.StopRateLimited
	case !sw.turn.StopAt.IsZero() && !now.Add(wait).Before(sw.turn.StopAt):
		sw.halt = outcome.StopDeadline
	}
	if sw.halt != "" {
		sw.stop(sw.halt)
		sw.turn.Logger.WarnContext(ctx, "rate limited by GitHub: stopping until a later run", attrs...)
		return false
	}
	sw.turn.Logger.WarnContext(ctx, "rate limited by GitHub: waiting", attrs...)
	if sleep(ctx, wait) != nil {
		sw.halt = outcome.StopCanceled
		sw.stop(outcome.StopCanceled)
		return false
	}
	return true
}

// failed is the error a hook's sweep ends with: none when it was a clean
// stop, the context's end included.
func (sw *sweep) failed(ctx context.Context, h githubapi.Hook, err error) error {
	if sw.halt != "" {
		return nil
	}
	if ctx.Err() != nil {
		sw.halt = outcome.StopCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			sw.halt = outcome.StopDeadline
		}
		sw.stop(sw.halt)
		return nil
	}
	return fmt.Errorf("redeliver: github hook %s: %w", h, err)
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
