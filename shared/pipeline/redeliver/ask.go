package redeliver

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// redeliver asks GitHub for the redeliveries due, soonest first, each
// hook within its own budget (Config.MaxRedeliveries): a delivery the
// store now holds whole is done (its redelivery repaired the record); one
// asked for Config.MaxAsks times is given up, counted (Result.Abandoned)
// and logged as an error; the rest are asked for, the next ask due after
// a wait that doubles each time. What a budget leaves is counted
// (Result.Backlog) and due next run.
func (sw *sweep) redeliver(ctx context.Context) error {
	r := sw.r
	now := sw.turn.Now()
	due, held, err := sw.due(ctx, now)
	if err != nil || len(due) == 0 {
		return err
	}
	hooks := map[string]githubapi.Hook{}
	for _, h := range r.cfg.Hooks {
		hooks[h.String()] = h
	}
	spent := map[string]int{}
	for _, d := range due {
		h, ok := hooks[d.Hook]
		if !ok {
			// A hook no longer configured: its redelivery expires unasked.
			continue
		}
		attrs := []any{slog.String("run_id", sw.turn.RunID), slog.String("hook", d.Hook), slog.String("event_id", d.ID),
			slog.String("event_type", d.Type), slog.Int64("delivery_id", d.Delivery), slog.Int("asked", d.Asked),
			slog.Time("failed_at", d.FailedAt)}
		switch {
		case held[d.ID].Complete() || sw.delivered[d.ID]:
			// Its redelivery got through, or another attempt did.
			if err := r.cfg.Redeliveries.Done(ctx, d); err != nil {
				return err
			}
			continue
		case d.Asked >= r.cfg.MaxAsks:
			if err := r.cfg.Redeliveries.Done(ctx, d); err != nil {
				return err
			}
			sw.res.Abandoned++
			sw.turn.Logger.ErrorContext(ctx, "GitHub delivery given up: asked for again and again, it never arrived whole", attrs...)
			continue
		case spent[d.Hook] >= r.cfg.MaxRedeliveries:
			sw.res.Backlog++
			continue
		case !sw.mayContinue(ctx):
			return nil
		}
		asked, stopped, err := sw.ask(ctx, h, d, now, attrs)
		if err != nil || stopped {
			return err
		}
		if asked {
			spent[d.Hook]++
		}
	}
	if sw.res.Backlog > 0 {
		sw.stop(StopMaxRedeliveries)
		sw.turn.Logger.WarnContext(ctx, "GitHub redeliveries due outnumber the budget: the rest are due next run",
			slog.String("run_id", sw.turn.RunID), slog.Int("backlog", sw.res.Backlog), slog.Int("budget_per_hook", r.cfg.MaxRedeliveries))
	}
	return nil
}

// due reads the redeliveries due by now, soonest first, and what the store
// holds of each one's event.
func (sw *sweep) due(ctx context.Context, now time.Time) ([]store.Redelivery, map[string]store.Held, error) {
	r := sw.r
	due, err := r.cfg.Redeliveries.Due(ctx, ProviderGitHub, now, r.dueRead())
	if err != nil || len(due) == 0 {
		return nil, nil, err
	}
	ids := make([]string, len(due))
	for i, d := range due {
		ids[i] = d.ID
	}
	held, err := r.cfg.Events.Held(ctx, ProviderGitHub, ids)
	if err != nil {
		return nil, nil, err
	}
	return due, held, nil
}

// ask asks GitHub for one redelivery, waiting out a rate limit that lifts
// soon enough, and records the answer: asked, the next ask is due after a
// wait doubled per ask; refused (too old), the redelivery is done.
// stopped reports a clean stop of the sweep (a rate limit, the deadline).
func (sw *sweep) ask(ctx context.Context, h githubapi.Hook, d store.Redelivery, now time.Time, attrs []any) (asked, stopped bool, _ error) {
	r := sw.r
	var err error
	for {
		err = r.cfg.GitHub.Redeliver(ctx, h, d.Delivery)
		if err == nil || !sw.throttled(ctx, h, err) {
			break
		}
	}
	switch {
	case err == nil:
		sw.res.Redelivered++
		next := now.Add(r.cfg.RedeliveryBackoff << min(d.Asked, 20))
		if _, err := r.cfg.Redeliveries.Asked(ctx, d, next); err != nil && !errors.Is(err, store.ErrRedeliveryMoved) {
			return true, false, err
		}
		sw.turn.Logger.WarnContext(ctx, "missed GitHub delivery redelivered", append(attrs, slog.Time("next_due", next))...)
		return true, false, nil
	case errors.Is(err, githubapi.ErrNotRedeliverable):
		sw.res.Refused++
		sw.turn.Logger.WarnContext(ctx, "GitHub refused a redelivery", append(attrs, slog.String("error", err.Error()))...)
		return false, false, r.cfg.Redeliveries.Done(ctx, d)
	case sw.halt != "":
		return false, true, nil
	default:
		return false, true, sw.failed(ctx, h, err)
	}
}
