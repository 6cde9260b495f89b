package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// GitHub is GitHub's webhook deliveries API; *githubapi.Client implements
// it.
type GitHub interface {
	// Deliveries lists one page of a hook's deliveries, newest first.
	Deliveries(ctx context.Context, h githubapi.Hook, cursor string) (githubapi.Page, error)
	// Redeliver asks GitHub to send a delivery again.
	Redeliver(ctx context.Context, h githubapi.Hook, id int64) error
}

// ProviderGitHub names GitHub in keys: records are github#<delivery guid>.
const ProviderGitHub = "github"

// Defaults for the GitHub part of Config.
const (
	// DefaultGitHubMaxWait: GitHub's primary limit resets hourly, so a
	// wait longer than a minute is left to a later run.
	DefaultGitHubMaxWait = time.Minute
	// DefaultGitHubMaxRedeliveries stays under GitHub's secondary limit on
	// writes (80 a minute) with room for the team's own.
	DefaultGitHubMaxRedeliveries = 50
)

// StopMaxRedeliveries: a run asked for its budget of redeliveries
// (Config.GitHubMaxRedeliveries); the next resumes from the checkpoint.
const StopMaxRedeliveries = "max_redeliveries"

// githubCheckpoint names a hook's checkpoint.
func githubCheckpoint(h githubapi.Hook) string { return ProviderGitHub + "#" + h.String() }

// github sweeps each configured hook. It runs after Stripe's groups, with
// a page budget and a stop reason of its own (Result.GitHubStopped): a
// Stripe backlog or a Stripe rate limit does not keep GitHub's deliveries
// from being repaired, and the other way round.
func (rn *run) github(ctx context.Context) error {
	r := rn.r
	for _, h := range r.cfg.GitHubHooks {
		if !rn.githubMayContinue(ctx) {
			break
		}
		name := githubCheckpoint(h)
		cp, err := r.cfg.Checkpoints.Load(ctx, name)
		if err != nil {
			return err
		}
		cp.Name = name
		cp, err = rn.hook(ctx, h, cp)
		rn.track(cp)
		if err != nil {
			return err
		}
	}
	return nil
}

// githubMayContinue reports whether the GitHub sweep may make another
// request, and records why not.
func (rn *run) githubMayContinue(ctx context.Context) bool {
	switch {
	case rn.res.GitHubStopped != stopNone:
		return false
	case ctx.Err() != nil:
		rn.res.GitHubStopped = StopCanceled
	case !rn.stopAt.IsZero() && !rn.r.cfg.Now().Before(rn.stopAt):
		rn.res.GitHubStopped = StopDeadline
	case rn.res.GitHubPages >= rn.maxPages():
		rn.res.GitHubStopped = StopMaxPages
	default:
		return true
	}
	return false
}

// hook sweeps one hook's deliveries over its window and returns its
// checkpoint as it left it. A window is listed newest first, as GitHub
// lists, from the newest delivery down to the window's start: GitHub's
// listing takes no time filter, so deliveries younger than the window's
// end are read and only looked at (an attempt that recent may be on its
// way, so its guid is left to the next run).
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
			rn.res.GitHubStopped = StopCheckpointMoved
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
	// 2xx), attempted too recently to judge, or already handled this run.
	skip := map[string]bool{}
	for {
		p, err := r.cfg.GitHub.Deliveries(ctx, h, w.cursor)
		if err != nil {
			if rn.githubThrottled(ctx, h, err) {
				continue
			}
			return cp, rn.githubErr(ctx, h, err)
		}
		rn.throttles = 0
		rn.res.GitHubPages++
		rn.res.Deliveries += len(p.Deliveries)
		reached, oldest, err := rn.deliveries(ctx, h, w, p, skip)
		if err != nil || rn.res.GitHubStopped != stopNone {
			// Stopped mid-page: the checkpoint keeps the page's cursor and
			// the next run lists it again; what this one redelivered is
			// then on record or on its way, and looked up again.
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
				rn.res.GitHubStopped = StopCheckpointMoved
				return cp, nil
			}
			if err != nil {
				return cp, err
			}
			cp = saved
		}
		if !rn.githubMayContinue(ctx) {
			return cp, nil
		}
	}
}

// deliveries handles one page: it looks up in the store, in one call, the
// guids whose latest attempt in the window failed, and asks GitHub to
// redeliver those with no record, oldest first. It reports whether the
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
		case at > w.to, d.OK():
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
	have, err := r.cfg.Events.Existing(ctx, ProviderGitHub, guids)
	if err != nil {
		return false, 0, err
	}
	for _, d := range slices.Backward(candidates) {
		if have[d.GUID] {
			continue
		}
		if rn.res.Redelivered >= r.cfg.GitHubMaxRedeliveries {
			rn.res.GitHubStopped = StopMaxRedeliveries
			return false, 0, nil
		}
		attrs := []any{slog.String("run_id", rn.res.RunID), slog.String("hook", h.String()),
			slog.String("event_id", d.GUID), slog.String("event_type", d.Event), slog.Int64("delivery_id", d.ID),
			slog.Int("status_code", d.StatusCode), slog.Time("delivered_at", d.DeliveredAt)}
		for {
			err = r.cfg.GitHub.Redeliver(ctx, h, d.ID)
			if err == nil || !rn.githubThrottled(ctx, h, err) {
				break
			}
		}
		switch {
		case err == nil:
			rn.res.Redelivered++
			r.cfg.Logger.WarnContext(ctx, "missed GitHub delivery redelivered", attrs...)
		case errors.Is(err, githubapi.ErrNotRedeliverable):
			rn.res.RedeliveryRefused++
			r.cfg.Logger.WarnContext(ctx, "GitHub refused a redelivery", append(attrs, slog.String("error", err.Error()))...)
		case rn.res.GitHubStopped != stopNone:
			return false, 0, nil
		default:
			return false, 0, rn.githubErr(ctx, h, err)
		}
	}
	return reached, oldest, nil
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
		rn.res.GitHubStopped = StopRateLimited
	case !rn.stopAt.IsZero() && !now.Add(wait).Before(rn.stopAt):
		rn.res.GitHubStopped = StopDeadline
	}
	if rn.res.GitHubStopped != stopNone {
		r.cfg.Logger.WarnContext(ctx, "rate limited by GitHub: stopping until a later run", attrs...)
		return false
	}
	r.cfg.Logger.WarnContext(ctx, "rate limited by GitHub: waiting", attrs...)
	if sleep(ctx, wait) != nil {
		rn.res.GitHubStopped = StopCanceled
		return false
	}
	return true
}

// githubErr is the error a hook's sweep ends with: none when it was a
// clean stop, the context's end included.
func (rn *run) githubErr(ctx context.Context, h githubapi.Hook, err error) error {
	if rn.res.GitHubStopped != stopNone {
		return nil
	}
	if ctx.Err() != nil {
		rn.res.GitHubStopped = StopCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			rn.res.GitHubStopped = StopDeadline
		}
		return nil
	}
	return fmt.Errorf("reconcile: github hook %s: %w", h, err)
}
