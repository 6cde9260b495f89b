package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/metrics"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// CheckpointName names the scheduled audit's checkpoint, kept beside the
// reconciler's (store.Checkpoints, in the events table).
const CheckpointName = "audit#stripe"

// The metrics of a scheduled run, on its one log line (function=reconciler).
const (
	// MetricRepaired counts the subscriptions a run repaired: drift means
	// deliveries are being lost somewhere (AuditRepairsAlarm).
	MetricRepaired = "audit_repaired"
	// MetricFailed is 1 for a run that failed before its list ended
	// (AuditFailedAlarm); the next run resumes from the checkpoint.
	MetricFailed = "audit_failed"
	// MetricCompleted is 1 for a run that reached the end of the list.
	MetricCompleted = "audit_completed"
)

// DefaultMaxPages is a scheduled run's page budget: 100 pages of 100
// subscriptions, about a minute of sequential requests, well within the
// function's timeout; a longer list is finished by the next runs.
const DefaultMaxPages = 100

// DefaultDeadlineMargin is how long before the invocation's deadline a
// scheduled run stops after its page, leaving time to write the checkpoint.
const DefaultDeadlineMargin = 30 * time.Second

// Checkpoints loads and saves the audit's checkpoint; *store.Checkpoints
// implements it.
type Checkpoints interface {
	Load(ctx context.Context, name string) (store.Checkpoint, error)
	Save(ctx context.Context, prev, next store.Checkpoint) (store.Checkpoint, error)
}

// Scheduled is the audit the template's AuditRate schedule runs through
// the reconciler function. Each run resumes where the last one stopped:
// the checkpoint named CheckpointName holds, while a pass over the list is
// in progress, the pass's start (WindowFrom, WindowTo) and the last
// subscription handled (Cursor); a run that reaches the end of the list
// clears them and sets DoneThrough to when it ended. The checkpoint's
// write is conditioned on the one read, so two runs never both advance it.
type Scheduled struct {
	Auditor     *Auditor
	Checkpoints Checkpoints
	// MaxPages bounds one run (DefaultMaxPages when zero); DeadlineMargin
	// (DefaultDeadlineMargin when zero) stops it before the invocation's
	// deadline.
	MaxPages       int
	DeadlineMargin time.Duration
	Logger         *slog.Logger
	Now            func() time.Time
}

// Resume continues a pass in progress and does nothing else: the template's
// AuditResume schedule calls it every few minutes, so a list longer than
// one run's budget is finished within hours, not one run a day. Without a
// pass in progress it costs one read of the checkpoint and logs nothing.
func (s *Scheduled) Resume(ctx context.Context) (Result, bool, error) {
	cp, err := s.Checkpoints.Load(ctx, CheckpointName)
	if err != nil {
		return Result{}, false, err
	}
	if !cp.InProgress() {
		return Result{}, false, nil
	}
	res, err := s.Run(ctx)
	return res, true, err
}

// Run is one scheduled run: it repairs what differs (it is never a dry
// run), saves where it stopped, and logs its result with its metrics.
func (s *Scheduled) Run(ctx context.Context) (Result, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	started := now()
	cp, err := s.Checkpoints.Load(ctx, CheckpointName)
	if err != nil {
		s.log(ctx, started, Result{}, err)
		return Result{}, err
	}
	o := Options{MaxPages: s.MaxPages}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	margin := s.DeadlineMargin
	if margin <= 0 {
		margin = DefaultDeadlineMargin
	}
	if dl, ok := ctx.Deadline(); ok {
		o.StopAt = dl.Add(-margin)
	}
	if cp.InProgress() {
		o.StartingAfter = cp.Cursor
	}
	res, runErr := s.Auditor.Run(ctx, o)
	next := cp
	next.RunID, next.UpdatedAt = res.RunID, now()
	switch {
	case res.Cursor != "":
		// Stopped mid-list (its budget, or a failure after some pages):
		// the next run resumes after the cursor.
		if !cp.InProgress() {
			next.WindowFrom, next.WindowTo = started.Unix(), started.Unix()
		}
		next.Cursor = res.Cursor
	case runErr == nil:
		next.DoneThrough = max(started.Unix(), cp.DoneThrough)
		next.WindowFrom, next.WindowTo, next.Cursor = 0, 0, ""
	}
	if res.Cursor != "" || runErr == nil {
		if _, err := s.Checkpoints.Save(ctx, cp, next); err != nil && runErr == nil {
			runErr = err
		}
	}
	s.log(ctx, started, res, runErr)
	return res, runErr
}

// log writes the run's one line, its metrics in the Embedded Metric Format.
func (s *Scheduled) log(ctx context.Context, started time.Time, res Result, err error) {
	if s.Logger == nil {
		return
	}
	failed, completed := 0, 0
	if err != nil {
		failed = 1
	} else if res.Cursor == "" {
		completed = 1
	}
	attrs := []slog.Attr{
		slog.String("run_id", res.RunID), slog.Int("listed", res.Listed), slog.Int("matched", res.Matched),
		slog.Int("missing_here", res.MissingHere), slog.Int("unknown_there", res.UnknownThere), slog.Int("raced", res.Raced),
		slog.Int("pages", res.Pages), slog.String("cursor", res.Cursor),
	}
	ids := make([]string, 0, len(res.Repairs))
	for _, r := range res.Repairs {
		ids = append(ids, mirror.Key(r.Account, r.ID))
	}
	attrs = append(attrs, slog.Any("repaired_ids", ids))
	if res.Effects > 0 {
		attrs = append(attrs, slog.Int("effects", res.Effects))
	}
	if res.NotRecorded != "" {
		// The run stands; only the console's record of it is missing.
		attrs = append(attrs, slog.String("not_recorded", res.NotRecorded))
	}
	level, msg := slog.LevelInfo, "audit run"
	if err != nil {
		level, msg = slog.LevelError, "audit run failed"
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	attrs = append(attrs, metrics.Attrs(started, []metrics.Dim{{Name: "function", Value: "reconciler"}},
		metrics.C(MetricRepaired, res.Repaired), metrics.C(MetricFailed, failed), metrics.C(MetricCompleted, completed))...)
	s.Logger.LogAttrs(ctx, level, msg, attrs...)
}
