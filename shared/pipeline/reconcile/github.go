package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

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

// ProviderGitHub names GitHub in keys: records are github#<delivery guid>.
const ProviderGitHub = "github"

// Defaults for the GitHub part of Config.
const (
	// DefaultGitHubMaxWait: GitHub's primary limit resets hourly, so a
	// wait longer than a minute is left to a later run.
	DefaultGitHubMaxWait = time.Minute
	// DefaultGitHubMaxRedeliveries bounds each hook's redeliveries per run,
	// under GitHub's secondary limit on writes (80 a minute) with room for
	// the team's own.
	DefaultGitHubMaxRedeliveries = 50
	// DefaultGitHubRedeliveryBackoff is the wait after a delivery's first
	// redelivery before it is asked for again, doubling with each ask: one
	// period of the template's schedule.
	DefaultGitHubRedeliveryBackoff = 10 * time.Minute
	// DefaultGitHubMaxAsks: a delivery asked for 8 times (over 42 hours at
	// the default backoff, inside GitHub's three days) that still left no
	// whole record is given up, counted, and alarmed on.
	DefaultGitHubMaxAsks = 8
)

// StopMaxRedeliveries: a hook's redeliveries due outnumbered its budget
// (Config.GitHubMaxRedeliveries); the rest are due for the next run, and
// counted (Result.RedeliveryBacklog).
const StopMaxRedeliveries = "max_redeliveries"

// dueRead bounds the redeliveries one run reads: four runs' budget of
// every hook, so a backlog stays counted.
func (r *Reconciler) dueRead() int {
	return min(1000, 4*r.cfg.GitHubMaxRedeliveries*max(len(r.cfg.GitHubHooks), 1))
}

// githubCheckpoint names a hook's checkpoint.
func githubCheckpoint(h githubapi.Hook) string { return ProviderGitHub + "#" + h.String() }

// github sweeps each configured hook, then asks for the redeliveries due.
// It runs after Stripe's groups, with page budgets and stop reasons of its
// own (Result.GitHubStopped): a Stripe backlog or a Stripe rate limit does
// not keep GitHub's deliveries from being repaired, and the other way
// round. One hook's error or budget does not keep the next from its turn.
func (rn *run) github(ctx context.Context) error {
	r := rn.r
	var errs []error
	for _, h := range r.cfg.GitHubHooks {
		if !rn.githubMayContinue(ctx) {
			break
		}
		rn.hookPages = 0
		name := githubCheckpoint(h)
		cp, err := r.cfg.Checkpoints.Load(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cp.Name = name
		cp, err = rn.hook(ctx, h, cp)
		rn.trackGitHub(cp)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if rn.githubMayContinue(ctx) {
		if err := rn.redeliver(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// trackGitHub keeps the least advanced hook's checkpoint.
func (rn *run) trackGitHub(cp store.Checkpoint) {
	if cp.DoneThrough == 0 {
		rn.githubNever = true
		return
	}
	if rn.githubOldest == 0 || cp.DoneThrough < rn.githubOldest {
		rn.githubOldest = cp.DoneThrough
	}
}

// githubStop records why the GitHub sweep, or a hook's part of it,
// stopped early: the first reason is the run's.
func (rn *run) githubStop(reason string) {
	if rn.res.GitHubStopped == stopNone {
		rn.res.GitHubStopped = reason
	}
}

// githubMayContinue reports whether the GitHub sweep may make another
// request at all, and records why not: a rate limit, the deadline, the
// context's end.
func (rn *run) githubMayContinue(ctx context.Context) bool {
	switch {
	case rn.githubHalt != stopNone:
		return false
	case ctx.Err() != nil:
		rn.githubHalt = StopCanceled
	case !rn.stopAt.IsZero() && !rn.r.cfg.Now().Before(rn.stopAt):
		rn.githubHalt = StopDeadline
	default:
		return true
	}
	rn.githubStop(rn.githubHalt)
	return false
}

// hookMayContinue reports whether the hook being swept may list another
// page: the sweep may go on and the hook's page budget is not spent.
func (rn *run) hookMayContinue(ctx context.Context) bool {
	if !rn.githubMayContinue(ctx) {
		return false
	}
	if rn.hookPages >= rn.maxPages() {
		rn.githubStop(StopMaxPages)
		return false
	}
	return true
}

// hook sweeps one hook's deliveries over its window and returns its
// checkpoint as it left it. A window is listed newest first, as GitHub
// lists, from the newest delivery down to the window's start: GitHub's
// listing takes no time filter, so deliveries younger than the window's
// end are read and only looked at (an attempt that recent may be on its
// way, so its guid is left to the next run). Each failed delivery the
// store does not hold whole is scheduled for redelivery (deliveries).
func (rn *run) hook(ctx context.Context, h githubapi.Hook, cp store.Checkpoint) (store.Checkpoint, error) {
	r := rn.r
	now := r.cfg.Now()
	floor := now.Add(-githubapi.Retention + retentionMargin).Unix()
	settled := now.Add(-r.cfg.Settle).Unix()
	persist := rn.opts.Since <= 0
	var w window
	switch {
	case !persist:
		w = window{from: now.Add(-min(rn.opts.Since, githubapi.Retention)).Unix(), to: settled}
	case cp.InProgress():
		w = window{from: cp.WindowFrom, to: cp.WindowTo, cursor: cp.Cursor, cursorCreated: cp.CursorCreated}
	case cp.DoneThrough > 0:
		w = window{from: cp.DoneThrough - int64(r.cfg.Overlap/time.Second), to: settled}
	default:
		// A first run starts where Stripe's does (FirstLookback): what failed
		// before the deployment is history, not redelivered.
		w = window{from: now.Add(-min(r.cfg.FirstLookback, githubapi.Retention)).Unix(), to: settled}
	}
	w.from = max(w.from, floor)
	finish := func(cp store.Checkpoint, through int64) (store.Checkpoint, error) {
		next := cp
		next.DoneThrough = max(cp.DoneThrough, through)
		next.WindowFrom, next.WindowTo, next.Cursor, next.CursorCreated = 0, 0, "", 0
		saved, err := rn.save(ctx, cp, next)
		if errors.Is(err, store.ErrCheckpointMoved) {
			rn.githubStop(StopCheckpointMoved)
			return cp, nil
		}
		return saved, err
	}
	// What is left of the window is older than GitHub keeps: it is as done
	// as it will ever be.
	expired := w.to < floor || (w.cursor != "" && w.cursorCreated < floor)
	if expired || w.to < w.from {
		if persist && (expired || cp.InProgress()) {
			return finish(cp, w.to)
		}
		return cp, nil
	}
	// skip holds the guids not to redeliver: delivered (an attempt got a
	// 2xx), attempted too recently to judge, or already looked at this run.
	skip := map[string]bool{}
	for {
		if !rn.hookMayContinue(ctx) {
			return cp, nil
		}
		p, err := r.cfg.GitHub.Deliveries(ctx, h, w.cursor)
		if err != nil {
			if rn.githubThrottled(ctx, h, err) {
				continue
			}
			return cp, rn.githubErr(ctx, h, err)
		}
		rn.throttles = 0
		rn.hookPages++
		rn.res.GitHubPages++
		rn.res.Deliveries += len(p.Deliveries)
		reached, oldest, err := rn.deliveries(ctx, h, w, p, skip)
		if err != nil {
			// Stopped mid-page: the checkpoint keeps the page's cursor and
			// the next run lists it again; what this one scheduled stays
			// scheduled (a redelivery is recorded once per event).
			return cp, err
		}
		if reached || p.Next == "" {
			if !persist {
				return cp, nil
			}
			return finish(cp, w.to)
		}
		w.cursor, w.cursorCreated = p.Next, oldest
		if persist {
			next := cp
			next.WindowFrom, next.WindowTo, next.Cursor, next.CursorCreated = w.from, w.to, w.cursor, w.cursorCreated
			saved, err := rn.save(ctx, cp, next)
			if errors.Is(err, store.ErrCheckpointMoved) {
				rn.githubStop(StopCheckpointMoved)
				return cp, nil
			}
			if err != nil {
				return cp, err
			}
			cp = saved
		}
	}
}

// rejected reports whether the receiver refused an attempt on purpose: a
// 4xx other than a timeout (408) or a rate limit (429) is its answer by
// design (no secret configured, a bad signature, a body over the size
// limit), and a redelivery would get it again.
func rejected(status int) bool {
	return status >= 400 && status < 500 && status != 408 && status != 429
}

// deliveries handles one page: it looks up in the store, in one call, the
// guids whose latest attempt in the window failed, and schedules a
// redelivery of each the store does not hold whole (no record, or a
// record that still needs the payload it never got: Held.Complete),
// oldest first. A delivery the receiver refused on purpose is left alone
// by a scheduled run, and counted; an operator's sweep (RunOptions.Since),
// run after fixing the cause, schedules it too. It reports whether the
// page reached the window's start, and the oldest delivery time on it.
func (rn *run) deliveries(ctx context.Context, h githubapi.Hook, w window, p githubapi.Page, skip map[string]bool) (bool, int64, error) {
	r := rn.r
	var (
		candidates []githubapi.Delivery
		reached    bool
		oldest     = w.cursorCreated
	)
	for _, d := range p.Deliveries {
		at := d.DeliveredAt.Unix()
		oldest = at
		switch {
		case at < w.from:
			reached = true
		case d.OK():
			// The receiver answered 2xx: it holds the event whole.
			skip[d.GUID] = true
			rn.delivered[d.GUID] = true
		case at > w.to:
			skip[d.GUID] = true
		case !skip[d.GUID]:
			// The newest failed attempt of its guid: the one to redeliver.
			skip[d.GUID] = true
			candidates = append(candidates, d)
		}
		if reached {
			break
		}
	}
	if len(candidates) == 0 {
		return reached, oldest, nil
	}
	guids := make([]string, len(candidates))
	for i, d := range candidates {
		guids[i] = d.GUID
	}
	held, err := r.cfg.Events.Held(ctx, ProviderGitHub, guids)
	if err != nil {
		return false, 0, err
	}
	now := r.cfg.Now()
	for _, d := range slices.Backward(candidates) {
		if held[d.GUID].Complete() {
			continue
		}
		attrs := []any{slog.String("run_id", rn.res.RunID), slog.String("hook", h.String()),
			slog.String("event_id", d.GUID), slog.String("event_type", githubType(d)), slog.Int64("delivery_id", d.ID),
			slog.Int("status_code", d.StatusCode), slog.Time("delivered_at", d.DeliveredAt)}
		if rejected(d.StatusCode) && rn.opts.Since <= 0 {
			rn.res.Rejected++
			r.cfg.Logger.WarnContext(
				ctx,
				"GitHub delivery refused by the receiver on purpose: not redelivered (fix the cause, then sweep with since)",
				attrs...)
			continue
		}
		scheduled, err := r.cfg.Redeliveries.Schedule(ctx, store.Redelivery{Provider: ProviderGitHub, ID: d.GUID, Type: githubType(d),
			Hook: h.String(), Delivery: d.ID, FailedAt: d.DeliveredAt, Due: now})
		if err != nil {
			return false, 0, err
		}
		if scheduled {
			rn.res.RedeliveriesScheduled++
			r.cfg.Logger.InfoContext(ctx, "missed GitHub delivery scheduled for redelivery", attrs...)
		}
	}
	return reached, oldest, nil
}

// githubType is a delivery's event type as the receiver names it.
func githubType(d githubapi.Delivery) string {
	if d.Action == "" {
		return d.Event
	}
	return d.Event + "." + d.Action
}

// redeliver asks GitHub for the redeliveries due, soonest first, each
// hook within its own budget (Config.GitHubMaxRedeliveries): a delivery
// the store now holds whole is done (its redelivery repaired the record);
// one asked for Config.GitHubMaxAsks times is given up, counted
// (Result.RedeliveriesAbandoned) and logged as an error; the rest are
// asked for, the next ask due after a wait that doubles each time. What a
// budget leaves is counted (Result.RedeliveryBacklog) and due next run.
func (rn *run) redeliver(ctx context.Context) error {
	r := rn.r
	now := r.cfg.Now()
	due, err := r.cfg.Redeliveries.Due(ctx, ProviderGitHub, now, r.dueRead())
	if err != nil || len(due) == 0 {
		return err
	}
	hooks := map[string]githubapi.Hook{}
	for _, h := range r.cfg.GitHubHooks {
		hooks[h.String()] = h
	}
	ids := make([]string, len(due))
	for i, d := range due {
		ids[i] = d.ID
	}
	held, err := r.cfg.Events.Held(ctx, ProviderGitHub, ids)
	if err != nil {
		return err
	}
	spent := map[string]int{}
	for _, d := range due {
		h, ok := hooks[d.Hook]
		if !ok {
			// A hook no longer configured: its redelivery expires unasked.
			continue
		}
		attrs := []any{slog.String("run_id", rn.res.RunID), slog.String("hook", d.Hook), slog.String("event_id", d.ID),
			slog.String("event_type", d.Type), slog.Int64("delivery_id", d.Delivery), slog.Int("asked", d.Asked),
			slog.Time("failed_at", d.FailedAt)}
		switch {
		case held[d.ID].Complete() || rn.delivered[d.ID]:
			// Its redelivery got through, or another attempt did.
			if err := r.cfg.Redeliveries.Done(ctx, d); err != nil {
				return err
			}
			continue
		case d.Asked >= r.cfg.GitHubMaxAsks:
			if err := r.cfg.Redeliveries.Done(ctx, d); err != nil {
				return err
			}
			rn.res.RedeliveriesAbandoned++
			r.cfg.Logger.ErrorContext(ctx, "GitHub delivery given up: asked for again and again, it never arrived whole", attrs...)
			continue
		case spent[d.Hook] >= r.cfg.GitHubMaxRedeliveries:
			rn.res.RedeliveryBacklog++
			continue
		case !rn.githubMayContinue(ctx):
			return nil
		}
		for {
			err = r.cfg.GitHub.Redeliver(ctx, h, d.Delivery)
			if err == nil || !rn.githubThrottled(ctx, h, err) {
				break
			}
		}
		switch {
		case err == nil:
			spent[d.Hook]++
			rn.res.Redelivered++
			next := now.Add(r.cfg.GitHubRedeliveryBackoff << min(d.Asked, 20))
			if _, err := r.cfg.Redeliveries.Asked(ctx, d, next); err != nil && !errors.Is(err, store.ErrRedeliveryMoved) {
				return err
			}
			r.cfg.Logger.WarnContext(ctx, "missed GitHub delivery redelivered", append(attrs, slog.Time("next_due", next))...)
		case errors.Is(err, githubapi.ErrNotRedeliverable):
			rn.res.RedeliveryRefused++
			r.cfg.Logger.WarnContext(ctx, "GitHub refused a redelivery", append(attrs, slog.String("error", err.Error()))...)
			if err := r.cfg.Redeliveries.Done(ctx, d); err != nil {
				return err
			}
		case rn.githubHalt != stopNone:
			return nil
		default:
			return rn.githubErr(ctx, h, err)
		}
	}
	if rn.res.RedeliveryBacklog > 0 {
		rn.githubStop(StopMaxRedeliveries)
		r.cfg.Logger.WarnContext(ctx, "GitHub redeliveries due outnumber the budget: the rest are due next run",
			slog.String("run_id", rn.res.RunID), slog.Int("backlog", rn.res.RedeliveryBacklog), slog.Int("budget_per_hook", r.cfg.GitHubMaxRedeliveries))
	}
	return nil
}

// githubThrottled handles a rate-limit answer: it waits until GitHub's
// reset when that is near enough and reports true (ask again), or records
// a clean stop and reports false. Any other error reports false.
func (rn *run) githubThrottled(ctx context.Context, h githubapi.Hook, err error) bool {
	r := rn.r
	rl, ok := githubapi.RateLimited(err)
	if !ok {
		return false
	}
	rn.res.Throttled++
	rn.res.GitHubThrottled++
	rn.throttles++
	now := r.cfg.Now()
	wait := max(rl.Until.Sub(now), 0)
	attrs := []any{slog.String("run_id", rn.res.RunID), slog.String("hook", h.String()), slog.Int("status", rl.Status),
		slog.Time("until", rl.Until), slog.Duration("wait", wait), slog.Int("in_a_row", rn.throttles)}
	switch {
	case wait > r.cfg.GitHubMaxWait, rn.throttles >= r.cfg.MaxThrottles:
		rn.githubHalt = StopRateLimited
	case !rn.stopAt.IsZero() && !now.Add(wait).Before(rn.stopAt):
		rn.githubHalt = StopDeadline
	}
	if rn.githubHalt != stopNone {
		rn.githubStop(rn.githubHalt)
		r.cfg.Logger.WarnContext(ctx, "rate limited by GitHub: stopping until a later run", attrs...)
		return false
	}
	r.cfg.Logger.WarnContext(ctx, "rate limited by GitHub: waiting", attrs...)
	if sleep(ctx, wait) != nil {
		rn.githubHalt = StopCanceled
		rn.githubStop(StopCanceled)
		return false
	}
	return true
}

// githubErr is the error a hook's sweep ends with: none when it was a
// clean stop, the context's end included.
func (rn *run) githubErr(ctx context.Context, h githubapi.Hook, err error) error {
	if rn.githubHalt != stopNone {
		return nil
	}
	if ctx.Err() != nil {
		rn.githubHalt = StopCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			rn.githubHalt = StopDeadline
		}
		rn.githubStop(rn.githubHalt)
		return nil
	}
	return fmt.Errorf("reconcile: github hook %s: %w", h, err)
}
