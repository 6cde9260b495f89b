package redeliver

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// window is the stretch of delivery times a hook's sweep looks at.
type window struct {
	from, to      int64
	cursor        string
	cursorCreated int64
}

// hook sweeps one hook's deliveries over its window and returns its
// checkpoint as it left it. A window is listed newest first, as GitHub
// lists, from the newest delivery down to the window's start: GitHub's
// listing takes no time filter, so deliveries younger than the window's
// end are read and only looked at (an attempt that recent may be on its
// way, so its guid is left to the next run). Each failed delivery the
// store does not hold whole is scheduled for redelivery (deliveries).
func (sw *sweep) hook(ctx context.Context, h githubapi.Hook, cp store.Checkpoint) (store.Checkpoint, error) {
	persist := sw.turn.Since <= 0
	w, floor := sw.window(cp)
	// What is left of the window is older than GitHub keeps: it is as done
	// as it will ever be.
	expired := w.to < floor || (w.cursor != "" && w.cursorCreated < floor)
	if expired || w.to < w.from {
		if persist && (expired || cp.InProgress()) {
			return sw.finish(ctx, cp, w.to)
		}
		return cp, nil
	}
	// skip holds the guids not to redeliver: delivered (an attempt got a
	// 2xx), attempted too recently to judge, or already looked at this run.
	skip := map[string]bool{}
	for {
		if !sw.hookMayContinue(ctx) {
			return cp, nil
		}
		p, err := sw.r.cfg.GitHub.Deliveries(ctx, h, w.cursor)
		if err != nil {
			if sw.throttled(ctx, h, err) {
				continue
			}
			return cp, sw.failed(ctx, h, err)
		}
		sw.res.Throttles = 0
		sw.hookPages++
		sw.res.Pages++
		sw.res.Deliveries += len(p.Deliveries)
		reached, oldest, err := sw.deliveries(ctx, h, w, p, skip)
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
			return sw.finish(ctx, cp, w.to)
		}
		w.cursor, w.cursorCreated = p.Next, oldest
		if persist {
			var moved bool
			if cp, moved, err = sw.keepCursor(ctx, cp, w); moved || err != nil {
				return cp, err
			}
		}
	}
}

// window chooses the stretch a hook's sweep looks at, and returns it with
// the oldest time GitHub still keeps: an operator's sweep (Turn.Since)
// looks at its own stretch; a scheduled one resumes the window under way,
// or starts the next from the checkpoint less the overlap, up to a little
// before now.
func (sw *sweep) window(cp store.Checkpoint) (w window, floor int64) {
	now := sw.turn.Now()
	floor = now.Add(-githubapi.Retention + retentionMargin).Unix()
	settled := now.Add(-sw.turn.Settle).Unix()
	switch {
	case sw.turn.Since > 0:
		w = window{from: now.Add(-min(sw.turn.Since, githubapi.Retention)).Unix(), to: settled}
	case cp.InProgress():
		w = window{from: cp.WindowFrom, to: cp.WindowTo, cursor: cp.Cursor, cursorCreated: cp.CursorCreated}
	case cp.DoneThrough > 0:
		w = window{from: cp.DoneThrough - int64(sw.turn.Overlap/time.Second), to: settled}
	default:
		// A first run starts where Stripe's does (FirstLookback): what failed
		// before the deployment is history, not redelivered.
		w = window{from: now.Add(-min(sw.turn.FirstLookback, githubapi.Retention)).Unix(), to: settled}
	}
	w.from = max(w.from, floor)
	return w, floor
}

// finish closes a hook's window: the checkpoint is done through through.
// Another run's write since cp was read stops the hook cleanly.
func (sw *sweep) finish(ctx context.Context, cp store.Checkpoint, through int64) (store.Checkpoint, error) {
	next := cp
	next.DoneThrough = max(cp.DoneThrough, through)
	next.WindowFrom, next.WindowTo, next.Cursor, next.CursorCreated = 0, 0, "", 0
	saved, err := sw.save(ctx, cp, next)
	if errors.Is(err, store.ErrCheckpointMoved) {
		sw.stop(outcome.StopCheckpointMoved)
		return cp, nil
	}
	return saved, err
}

// keepCursor records the window under way and its cursor after a page
// fully handled; moved reports that another run wrote the checkpoint since
// (a clean stop).
func (sw *sweep) keepCursor(ctx context.Context, cp store.Checkpoint, w window) (_ store.Checkpoint, moved bool, _ error) {
	next := cp
	next.WindowFrom, next.WindowTo, next.Cursor, next.CursorCreated = w.from, w.to, w.cursor, w.cursorCreated
	saved, err := sw.save(ctx, cp, next)
	if errors.Is(err, store.ErrCheckpointMoved) {
		sw.stop(outcome.StopCheckpointMoved)
		return cp, true, nil
	}
	if err != nil {
		return cp, false, err
	}
	return saved, false, nil
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
func (sw *sweep) deliveries(ctx context.Context, h githubapi.Hook, w window, p githubapi.Page, skip map[string]bool) (bool, int64, error) {
	r := sw.r
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
			sw.delivered[d.GUID] = true
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
	now := sw.turn.Now()
	for _, d := range slices.Backward(candidates) {
		if held[d.GUID].Complete() {
			continue
		}
		attrs := []any{slog.String("run_id", sw.turn.RunID), slog.String("hook", h.String()),
			slog.String("event_id", d.GUID), slog.String("event_type", githubType(d)), slog.Int64("delivery_id", d.ID),
			slog.Int("status_code", d.StatusCode), slog.Time("delivered_at", d.DeliveredAt)}
		if rejected(d.StatusCode) && sw.turn.Since <= 0 {
			sw.res.Rejected++
			sw.turn.Logger.WarnContext(
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
			sw.res.Scheduled++
			sw.turn.Logger.InfoContext(ctx, "missed GitHub delivery scheduled for redelivery", attrs...)
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
