package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// group reconciles one group and returns its checkpoint as it left it:
// the window it lists this run (window.go), then that window's pages.
func (rn *run) group(ctx context.Context, g Group, cp store.Checkpoint) (store.Checkpoint, error) {
	cp, w, ok, err := rn.chooseWindow(ctx, g, cp)
	if err != nil || !ok {
		return cp, err
	}
	return rn.pages(ctx, g, cp, w)
}

// pages lists window w of group g page by page, newest first, compares
// each with the store and ingests what is missing (page), and writes the
// checkpoint after each page fully handled. It returns the checkpoint as
// it left it.
func (rn *run) pages(ctx context.Context, g Group, cp store.Checkpoint, w window) (store.Checkpoint, error) {
	r := rn.r
	persist := rn.opts.Since <= 0
	rn.progress.From, rn.progress.To, rn.progress.Through = time.Unix(w.from, 0), time.Unix(w.to, 0), time.Unix(w.to, 0)
	backoff := r.cfg.ThrottleBackoff
	for {
		q := stripeapi.EventQuery{CreatedGTE: w.from, CreatedLTE: w.to, Types: g.Types, StartingAfter: w.cursor, Account: g.Account}
		err := r.cfg.Stripe.ListEvents(ctx, q, func(p stripeapi.Page) (bool, error) {
			rn.throttles = 0
			backoff = r.cfg.ThrottleBackoff
			last, err := rn.page(ctx, p, cp.HistoryBefore)
			if err != nil {
				return false, err
			}
			rn.res.Pages++
			if last.ID != "" {
				w.cursor, w.cursorCreated = last.ID, last.Created
				rn.progress.Through = time.Unix(last.Created, 0)
			}
			if persist {
				next := cp
				if p.HasMore {
					next.WindowFrom, next.WindowTo, next.Cursor, next.CursorCreated = w.from, w.to, w.cursor, w.cursorCreated
				} else {
					next.DoneThrough = max(cp.DoneThrough, w.to)
					next.WindowFrom, next.WindowTo, next.Cursor, next.CursorCreated = 0, 0, "", 0
				}
				if cp, err = rn.save(ctx, cp, next); err != nil {
					return false, err
				}
			}
			rn.report()
			if !p.HasMore {
				return false, nil
			}
			return rn.mayContinue(ctx), nil
		})
		switch {
		case errors.Is(err, store.ErrCheckpointMoved):
			rn.res.Stopped = outcome.StopCheckpointMoved
			return cp, nil
		case stripeapi.RateLimited(err):
			rn.res.Throttled++
			rn.throttles++
			r.cfg.Logger.WarnContext(ctx, "rate limited by Stripe: backing off",
				slog.String("run_id", rn.res.RunID), slog.Int("in_a_row", rn.throttles), slog.Duration("backoff", backoff))
			if rn.throttles >= r.cfg.MaxThrottles {
				rn.res.Stopped = outcome.StopRateLimited
				return cp, nil
			}
			if !rn.stopAt.IsZero() && !r.cfg.Now().Add(backoff).Before(rn.stopAt) {
				rn.res.Stopped = outcome.StopDeadline
				return cp, nil
			}
			if sleep(ctx, backoff) != nil {
				rn.res.Stopped = outcome.StopCanceled
				return cp, nil
			}
			backoff *= 2
			if !rn.mayContinue(ctx) {
				return cp, nil
			}
			continue
		case err != nil && ctx.Err() != nil:
			// Out of time or canceled mid-page: nothing is half-written, the
			// checkpoint holds the last page fully handled.
			rn.res.Stopped = outcome.StopCanceled
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				rn.res.Stopped = outcome.StopDeadline
			}
			return cp, nil
		case err != nil:
			return cp, fmt.Errorf("reconcile: group %s: %w", g.Checkpoint, err)
		}
		return cp, nil
	}
}

// page compares one page with the store and ingests what is missing, oldest
// first: an event created before since (the group's start) as history,
// which only a backfill ingests. It returns the envelope of the page's
// oldest event (the next cursor).
func (rn *run) page(ctx context.Context, p stripeapi.Page, since int64) (event.Envelope, error) {
	r := rn.r
	if len(p.Events) == 0 {
		return event.Envelope{}, nil
	}
	envs := make([]event.Envelope, len(p.Events))
	ids := make([]string, len(p.Events))
	for i, raw := range p.Events {
		env, err := event.DecodeEnvelope(raw)
		if err != nil {
			return event.Envelope{}, fmt.Errorf("reconcile: event %d of a page: %w", i, err)
		}
		if env.Livemode != r.cfg.Livemode {
			return event.Envelope{}, fmt.Errorf("%w: event %s has livemode=%t", ErrWrongMode, env.ID, env.Livemode)
		}
		envs[i], ids[i] = env, env.ID
	}
	rn.res.Listed += len(envs)
	have, err := r.cfg.Events.Existing(ctx, r.cfg.Provider, ids)
	if err != nil {
		return event.Envelope{}, err
	}
	// The page is newest first; ingesting oldest first hands the processor
	// an object's events in the order they happened.
	for i := len(envs) - 1; i >= 0; i-- {
		env := envs[i]
		if have[env.ID] {
			continue
		}
		history := env.Created < since
		source := event.SourceReconciler
		switch {
		case history && !rn.opts.Backfill:
			// Not listed but by a backfill; never ingested otherwise.
			continue
		case history && !rn.opts.WithEffects:
			source = event.SourceBackfill
		}
		res, err := r.cfg.Ingester.Ingest(ctx, env, p.Events[i], source)
		if err != nil {
			return event.Envelope{}, fmt.Errorf("reconcile: ingest event %s: %w", env.ID, err)
		}
		attrs := []any{slog.String("run_id", rn.res.RunID), slog.String("event_id", env.ID), slog.String("event_type", env.Type),
			slog.Time("created", time.Unix(env.Created, 0)), slog.String("outcome", string(res.Outcome))}
		switch {
		case (res.Outcome == outcome.Stored || res.Outcome == outcome.Ignored) && history:
			rn.res.Backfilled++
			r.cfg.Logger.InfoContext(ctx, "history event backfilled", append(attrs, slog.String("source", string(source)))...)
		case res.Outcome == outcome.Stored || res.Outcome == outcome.Ignored:
			rn.res.Missing++
			r.cfg.Logger.WarnContext(ctx, "missing event ingested", attrs...)
		default:
			rn.res.Raced++
			r.cfg.Logger.InfoContext(ctx, "event stored by its webhook meanwhile", attrs...)
		}
	}
	return envs[len(envs)-1], nil
}

// ErrWrongMode means the provider listed events of the other mode than the
// deployment serves: the API key belongs to the wrong mode.
var ErrWrongMode = errors.New("reconcile: listed events of the wrong mode (check the API key against STRIPE_MODE)")
