package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/metrics"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// record keeps the run's result for operators. It runs after the run's own
// context may have ended (a run stopped at its deadline is the one to
// see), with a few seconds of its own; a failure to keep it is logged and
// changes nothing about the run.
func (r *Reconciler) record(ctx context.Context, rn *run, err error) {
	if r.cfg.Runs == nil {
		return
	}
	res := rn.res
	x := store.Run{
		ID: res.RunID, StartedAt: rn.startedAt, Duration: res.Duration, Outcome: string(outcome.RunComplete), Stopped: res.Stopped,
		Since: rn.opts.Since, Listed: res.Listed, Missing: res.Missing, Raced: res.Raced, Stuck: res.Stuck, Pages: res.Pages, Throttled: res.Throttled,
	}
	switch {
	case err != nil:
		x.Outcome, x.Error = string(outcome.RunAborted), err.Error()
	case res.Stopped != stopNone:
		x.Outcome = string(outcome.RunPartial)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if rerr := r.cfg.Runs.Record(rctx, r.cfg.Provider, x); rerr != nil {
		r.cfg.Logger.WarnContext(ctx, "reconcile: keeping the run's result failed", slog.String("run_id", res.RunID), slog.String("error", rerr.Error()))
	}
}

// report calls the progress callback.
func (rn *run) report() {
	if rn.opts.Progress == nil {
		return
	}
	p := rn.progress
	p.Group = rn.groupIdx
	p.Pages, p.Listed, p.Missing, p.Backfilled, p.Stuck = rn.res.Pages, rn.res.Listed, rn.res.Missing, rn.res.Backfilled, rn.res.Stuck
	rn.opts.Progress(p)
}

// report logs the run's one line, with its metrics.
func (r *Reconciler) report(ctx context.Context, rn *run, err error) {
	res := rn.res
	ended := outcome.RunComplete
	level := slog.LevelInfo
	switch {
	case err != nil:
		ended, level = outcome.RunAborted, slog.LevelError
	case res.Stopped != stopNone, res.GitHub.Stopped != stopNone:
		ended = outcome.RunPartial
	}
	if (res.Missing > 0 || res.GitHub.Redelivered > 0 || res.AccountFailures > 0) && level < slog.LevelWarn {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("run_id", res.RunID),
		slog.String("outcome", string(ended)),
		slog.Int("groups", len(rn.groups)),
	}
	if r.cfg.SeenAccounts != nil || r.cfg.ListAccounts != nil {
		attrs = append(attrs, slog.Int("connect_accounts", res.Accounts))
	}
	if len(rn.accountErrs) > 0 {
		attrs = append(attrs, slog.String("connect_accounts_error", errors.Join(rn.accountErrs...).Error()))
	}
	if res.Stopped != stopNone {
		attrs = append(attrs, slog.String("stopped", res.Stopped))
	}
	if res.GitHub.Stopped != stopNone {
		attrs = append(attrs, slog.String("github_stopped", res.GitHub.Stopped))
	}
	if rn.opts.Since > 0 {
		attrs = append(attrs, slog.Duration("since", rn.opts.Since))
	}
	if rn.opts.Backfill {
		attrs = append(attrs, slog.Bool("backfill", true), slog.Bool("with_effects", rn.opts.WithEffects))
	}
	if rn.oldest > 0 && !rn.anyNever {
		attrs = append(attrs, slog.Time("checkpoint", time.Unix(rn.oldest, 0)))
	}
	if rn.started > 0 {
		// Once per group and deployment: what came before is history.
		attrs = append(attrs, slog.Time("reconciliation_start", time.Unix(rn.started, 0)))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	ms := []metrics.Metric{
		metrics.C(MetricListed, res.Listed),
		metrics.C(MetricMissing, res.Missing),
		metrics.C(MetricBackfilled, res.Backfilled),
		metrics.C(MetricRaced, res.Raced),
		metrics.C(MetricStuck, res.Stuck),
		metrics.C(MetricPages, res.Pages),
		metrics.C(MetricThrottled, res.Throttled),
		metrics.Ms(MetricDuration, res.Duration),
		{Name: MetricCheckpointAge, Unit: metrics.Seconds, Value: res.CheckpointAge.Seconds()},
	}
	if res.AccountFailures > 0 {
		// Only when one failed: a line without found accounts stays as
		// it was.
		ms = append(ms, metrics.C(MetricAccountFailures, res.AccountFailures))
	}
	// GitHub's metrics only where it is configured: a Stripe-only
	// deployment's line stays as it was, in bytes too.
	if r.cfg.Redeliverer != nil {
		ms = append(ms, res.GitHub.Metrics()...)
	}
	attrs = append(attrs, metrics.Attrs(r.cfg.Now(), []metrics.Dim{{Name: "function", Value: metricsFunction}}, ms...)...)
	r.cfg.Logger.LogAttrs(ctx, level, "reconcile run", attrs...)
}

// Metric names of a run's log line (namespace metrics.Namespace, dimension
// function=reconciler).
const (
	MetricListed        = "listed"
	MetricMissing       = "missing_found"
	MetricBackfilled    = "backfilled"
	MetricRaced         = "raced"
	MetricStuck         = "stuck_requeued"
	MetricPages         = "pages"
	MetricThrottled     = "throttled"
	MetricDuration      = "run_duration"
	MetricCheckpointAge = "checkpoint_age"
	// MetricAccountFailures counts the sources of connected accounts
	// that failed a run (Result.AccountFailures).
	MetricAccountFailures = "account_failures"
	// GitHub's, on the line only when it is configured, are package
	// redeliver's (redeliver.Metric*).
)
