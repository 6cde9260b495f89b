package reconcile

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// requeueStuck sends the pointer of every record stuck unfinished again,
// every provider's (at most MaxStuck in all).
func (rn *run) requeueStuck(ctx context.Context) error {
	r := rn.r
	cutoff := r.cfg.Now().Add(-r.cfg.StuckAfter)
sweep:
	for _, provider := range r.cfg.StuckProviders {
		left := r.cfg.MaxStuck - rn.res.Stuck
		if left <= 0 {
			break
		}
		for rec, err := range r.cfg.Events.Stuck(ctx, provider, cutoff, left) {
			if err != nil {
				return err
			}
			if !rec.Status.Pending() {
				continue
			}
			if err := r.cfg.Queue.Send(ctx, event.PointerTo(rec)); err != nil {
				return fmt.Errorf("reconcile: re-enqueue stuck event %s#%s: %w", rec.Provider, rec.ID, err)
			}
			rn.res.Stuck++
			r.cfg.Logger.WarnContext(ctx, "stuck event re-enqueued",
				slog.String("run_id", rn.res.RunID), slog.String("provider", rec.Provider),
				slog.String("event_id", rec.ID), slog.String("event_type", rec.Type),
				slog.String("status", string(rec.Status)), slog.Time("status_at", rec.StatusAt))
			if !rn.stopAt.IsZero() && !r.cfg.Now().Before(rn.stopAt) {
				break sweep
			}
		}
	}
	rn.report()
	return nil
}
