package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// window is the stretch of creation times a group lists in one go.
type window struct {
	from, to      int64
	cursor        string
	cursorCreated int64
}

// chooseWindow chooses the stretch a group lists this run: a scheduled run
// resumes the window its checkpoint holds under way, or starts the next
// one from the checkpoint less the overlap up to a little before now; an
// operator's sweep (RunOptions.Since) lists its own stretch. A group's
// first run records where its reconciliation starts. ok is false when
// there is nothing to list (the window is empty, or what is left of it has
// left Stripe's retention and is closed); the checkpoint comes back as the
// choice left it.
func (rn *run) chooseWindow(ctx context.Context, g Group, cp store.Checkpoint) (_ store.Checkpoint, _ window, ok bool, _ error) {
	r := rn.r
	now := r.cfg.Now()
	floor := now.Add(-Retention + retentionMargin).Unix()
	settled := now.Add(-r.cfg.Settle).Unix()
	persist := rn.opts.Since <= 0
	if cp.Seq == 0 {
		// The group's first run, of whatever kind: its start is now, less
		// the stretch since the deployment a first scheduled run may come
		// after. What was created before is history: a new deployment does
		// not replay a month of events through the team's effects.
		start := now.Add(-r.cfg.FirstLookback).Unix()
		if g.Account != "" && rn.deploymentStart > 0 {
			// A connected account's history is the deployment's: what it
			// created after the deployment's reconciliation started is a
			// lost webhook, however late the account is first listed
			// (within Stripe's retention: the window's floor).
			start = rn.deploymentStart
		}
		next := cp
		next.HistoryBefore, next.DoneThrough = start, start
		saved, err := rn.save(ctx, cp, next)
		if errors.Is(err, store.ErrCheckpointMoved) {
			rn.res.Stopped = outcome.StopCheckpointMoved
			return cp, window{}, false, nil
		}
		if err != nil {
			return cp, window{}, false, err
		}
		cp = saved
		rn.started = start
	}
	var w window
	switch {
	case !persist:
		w = window{from: now.Add(-min(rn.opts.Since, Retention)).Unix(), to: settled}
		if !rn.opts.Backfill {
			w.from = max(w.from, cp.HistoryBefore)
		}
	case cp.InProgress():
		w = window{from: cp.WindowFrom, to: cp.WindowTo, cursor: cp.Cursor, cursorCreated: cp.CursorCreated}
	default:
		w = window{from: max(cp.DoneThrough-int64(r.cfg.Overlap/time.Second), cp.HistoryBefore), to: settled}
	}
	w.from = max(w.from, floor)
	// What is left of the window has left Stripe's retention: nothing more
	// can be listed, so the window is as done as it will ever be.
	expired := w.to < floor || (w.cursor != "" && w.cursorCreated < floor)
	if expired || w.to < w.from {
		if persist && (expired || cp.InProgress()) {
			next := cp
			next.DoneThrough = max(cp.DoneThrough, w.to)
			next.WindowFrom, next.WindowTo, next.Cursor, next.CursorCreated = 0, 0, "", 0
			saved, err := rn.save(ctx, cp, next)
			if errors.Is(err, store.ErrCheckpointMoved) {
				rn.res.Stopped = outcome.StopCheckpointMoved
				return cp, window{}, false, nil
			}
			return saved, window{}, false, err
		}
		return cp, window{}, false, nil
	}
	return cp, w, true, nil
}
