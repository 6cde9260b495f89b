package reconcile

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// Groups returns the groups of types the reconciler lists, in order: those
// of the platform and of Config.ConnectAccounts; a run adds those of the
// accounts it finds (Config.SeenAccounts, Config.ListAccounts).
func (r *Reconciler) Groups() []Group { return r.groups }

// GitHubHooks returns the GitHub hooks whose deliveries a run sweeps
// (Config.Redeliverer), none when it is unset.
func (r *Reconciler) GitHubHooks() []githubapi.Hook {
	if r.cfg.Redeliverer == nil {
		return nil
	}
	return r.cfg.Redeliverer.Hooks()
}

// stopNone is Result.Stopped of a run that reached the present; the
// reasons it stops early are outcome.Stop*.
const stopNone = ""

// metricsFunction is the value of the metrics' function dimension.
const metricsFunction = "reconciler"

// RunOptions adjust one run.
type RunOptions struct {
	// Since, when positive, lists the events created in this last stretch
	// of time (at most Retention) instead of the checkpoint's window, and
	// leaves the checkpoints untouched: an operator's one-off sweep. It
	// lists nothing created before a group's start (its checkpoint's
	// Since) unless Backfill says so.
	Since time.Duration
	// Backfill, with Since, lists history too: events created before a
	// group's start. Those missing from the store are ingested with source
	// backfill, which the processor applies to the mirror without running
	// any effect (outcome backfilled), unless WithEffects. Missing events
	// created after the start are lost webhooks, ingested as any run
	// ingests them.
	Backfill bool
	// WithEffects ingests backfilled history with source reconciler, like
	// a lost webhook: the processor runs the team's effects for each.
	WithEffects bool
	// MaxPages, when positive, replaces Config.MaxPages for this run (an
	// operator's sweep may want more than a scheduled run's budget).
	MaxPages int
	// Progress, when set, is called after each page and after the stuck
	// records are re-enqueued, from the goroutine that called Run.
	Progress func(Progress)
}

// Progress reports a run under way.
type Progress struct {
	// Group is the index of the group being listed in Groups, of Groups.
	Group, Groups int
	// From and To bound the window being listed; Through is the creation
	// time of the oldest event handled in it so far (the listing goes
	// newest first).
	From, To, Through time.Time
	// Totals of the run so far.
	Pages, Listed, Missing, Backfilled, Stuck int
}

// Result is what a run did.
type Result struct {
	RunID string
	// Listed counts the events listed from the provider.
	Listed int
	// Missing counts the events ingested because the store had no record:
	// webhooks lost upstream.
	Missing int
	// Raced counts events missing from the store when looked up but stored
	// by a webhook before the reconciler could: not losses.
	Raced int
	// Backfilled counts the history events a backfill ingested (not lost
	// webhooks: they predate the group's start).
	Backfilled int
	// Stuck counts the unfinished records re-enqueued.
	Stuck int
	// Pages counts the pages listed (one request each).
	Pages int
	// Throttled counts 429 answers that made the run back off.
	Throttled int
	// Stopped says why the run stopped early (outcome.Stop*), "" when it reached the
	// present in every group.
	Stopped string
	// GitHub is what the run's GitHub sweep did (Config.Redeliverer): its
	// Throttled is counted in Throttled too.
	GitHub redeliver.Result
	// CheckpointAge is how far behind the least advanced group's checkpoint
	// is at the end of the run: Retention for a group that never completed
	// a window.
	CheckpointAge time.Duration
	Duration      time.Duration
	// Accounts counts the connected accounts listed; AccountFailures the
	// sources of accounts (Config.SeenAccounts, Config.ListAccounts) that
	// failed this run, whose accounts wait for a later one.
	Accounts, AccountFailures int
}

// Input is the scheduled invocation's payload: EventBridge Scheduler
// delivers the schedule's Input, by default none or an empty object.
type Input struct {
	// Since, a Go duration like "24h", runs a one-off sweep (RunOptions).
	Since string `json:"since,omitempty"`
	// Backfill and WithEffects, with Since: RunOptions'.
	Backfill    bool `json:"backfill,omitempty"`
	WithEffects bool `json:"with_effects,omitempty"`
}

// Handle is the Lambda handler: one run per scheduled invocation. It
// returns an error only when the run failed, so the invocation is counted
// as an error; a run that stopped early to resume later is a success.
func (r *Reconciler) Handle(ctx context.Context, payload json.RawMessage) error {
	var in Input
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &in); err != nil {
			r.cfg.Logger.ErrorContext(ctx, "reconcile: bad input", slog.String("error", err.Error()))
			return fmt.Errorf("reconcile: decode input: %w", err)
		}
	}
	var opts RunOptions
	if in.Since != "" {
		d, err := time.ParseDuration(in.Since)
		if err != nil || d <= 0 {
			r.cfg.Logger.ErrorContext(ctx, "reconcile: bad input", slog.String("since", in.Since))
			return fmt.Errorf("reconcile: input since=%q is not a positive duration like 24h", in.Since)
		}
		opts.Since = d
	}
	if (in.Backfill || in.WithEffects) && opts.Since == 0 || in.WithEffects && !in.Backfill {
		r.cfg.Logger.ErrorContext(ctx, "reconcile: bad input", slog.Bool("backfill", in.Backfill), slog.Bool("with_effects", in.WithEffects))
		return errors.New("reconcile: input backfill needs since, and with_effects needs backfill")
	}
	opts.Backfill, opts.WithEffects = in.Backfill, in.WithEffects
	_, err := r.Run(ctx, opts)
	return err
}

// run is one run's state.
type run struct {
	r *Reconciler
	// groups are this run's: the configured ones and those of the
	// accounts found at its start (accounts).
	groups []Group
	// accountErrs are the failures to find the run's accounts.
	accountErrs []error
	// known are the accounts of groups (configured and listed); cursor is
	// where the reading of the accounts seen resumes (AccountsCursor).
	known  []string
	cursor store.Checkpoint
	opts   RunOptions
	res    Result
	stopAt time.Time // zero: no deadline
	// throttles counts 429s in a row.
	throttles int
	// oldest is the least advanced done_through over the groups.
	oldest   int64
	anyNever bool
	groupIdx int
	// groupLimit, when positive, is the page count at which the group
	// being listed has spent its share of the budget (do), and shareSpent
	// says it did.
	groupLimit int
	shareSpent bool
	progress   Progress
	startedAt  time.Time
	// started is the start this run set for a group reconciled for the
	// first time (Unix seconds), zero when none.
	started int64
	// deploymentStart is when the deployment's reconciliation started
	// (Unix seconds: the earliest start of the platform's groups), zero
	// before any: a connected account's groups start there, however late
	// the account is first listed, so history is decided once for the
	// deployment.
	deploymentStart int64
}

// Run reconciles once: it re-enqueues stuck records, then lists each group's
// window and ingests what is missing, until every group reaches the present
// or the run must stop (see Result.Stopped). It logs one line with the run's
// metrics. An error means the run could not go on (Stripe or AWS failed);
// whatever it finished before is kept and the next run resumes from there.
func (r *Reconciler) Run(ctx context.Context, opts RunOptions) (Result, error) {
	rn := &run{r: r, opts: opts, startedAt: r.cfg.Now()}
	rn.res.RunID = newRunID()
	rn.groups = r.accounts(ctx, rn)
	rn.progress.Groups = len(rn.groups)
	if dl, ok := ctx.Deadline(); ok {
		rn.stopAt = dl.Add(-r.cfg.DeadlineMargin)
	}
	err := rn.do(ctx)
	// GitHub's sweep runs whatever became of Stripe's: one provider's
	// outage must not keep the other's deliveries from being repaired.
	if r.cfg.Redeliverer != nil {
		err = errors.Join(err, rn.redeliver(ctx))
	}
	if err != nil && ctx.Err() != nil {
		// The context ended mid-call: nothing is half-written (a checkpoint
		// is written only after its page is fully handled), so this is a
		// stop like any other, not a failure.
		err = nil
		rn.res.Stopped = outcome.StopCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			rn.res.Stopped = outcome.StopDeadline
		}
	}
	now := r.cfg.Now()
	rn.res.Duration = now.Sub(rn.startedAt)
	switch {
	case rn.anyNever || rn.oldest == 0:
		rn.res.CheckpointAge = Retention
	default:
		rn.res.CheckpointAge = now.Sub(time.Unix(rn.oldest, 0))
	}
	r.report(ctx, rn, err)
	r.record(ctx, rn, err)
	return rn.res, err
}

// redeliver gives GitHub's sweep (Config.Redeliverer) its turn, with the
// run's deadline, options and window settings; its rate-limit answers
// count in the run's.
func (rn *run) redeliver(ctx context.Context) error {
	r := rn.r
	res, err := r.cfg.Redeliverer.Sweep(ctx, redeliver.Turn{
		RunID: rn.res.RunID, Now: r.cfg.Now, Logger: r.cfg.Logger, StopAt: rn.stopAt, Since: rn.opts.Since, MaxPages: rn.maxPages(),
		Overlap: r.cfg.Overlap, Settle: r.cfg.Settle, FirstLookback: r.cfg.FirstLookback,
		MaxThrottles: r.cfg.MaxThrottles, Throttles: rn.throttles,
	})
	rn.res.GitHub = res
	rn.res.Throttled += res.Throttled
	rn.throttles = res.Throttles
	return err
}

func (rn *run) do(ctx context.Context) error {
	if err := rn.requeueStuck(ctx); err != nil {
		return err
	}
	if rn.r.cfg.SeenAccounts == nil {
		_, err := rn.pass(ctx, rn.groups)
		return err
	}
	return rn.seen(ctx)
}

// pass lists groups: the least advanced first, each up to its share of
// the budget left, then what is left to those their share did not bring
// to the present. reached[i] says group i had its first turn.
func (rn *run) pass(ctx context.Context, groups []Group) (reached []bool, err error) {
	reached = make([]bool, len(groups))
	cps := make([]store.Checkpoint, len(groups))
	for i, g := range groups {
		cp, err := rn.r.LoadCheckpoint(ctx, g)
		if err != nil {
			return reached, err
		}
		cps[i] = cp
		if g.Account == "" && cp.Seq > 0 && cp.HistoryBefore > 0 && (rn.deploymentStart == 0 || cp.HistoryBefore < rn.deploymentStart) {
			rn.deploymentStart = cp.HistoryBefore
		}
	}
	defer func() {
		for _, cp := range cps {
			rn.track(cp)
		}
	}()
	// The page budget is shared fairly: the least advanced group first,
	// each up to its share, then what is left to those their share did not
	// bring to the present, in the same order. A backlog in one group
	// (thousands of events after an outage) cannot keep the others from
	// being listed run after run, as a fixed order with one shared budget
	// did.
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cps[a].DoneThrough, cps[b].DoneThrough) })
	share := max(1, (rn.maxPages()-rn.res.Pages)/max(len(groups), 1))
	// The groups are the last of the run's (Progress.Group).
	offset := len(rn.groups) - len(groups)
	behind := make([]bool, len(groups))
	for pass := range 2 {
		for _, i := range order {
			if pass == 1 && !behind[i] {
				continue
			}
			rn.groupLimit = 0
			if pass == 0 {
				rn.groupLimit = rn.res.Pages + share
			}
			if ctx.Err() != nil || !rn.mayContinue(ctx) {
				rn.groupLimit = 0
				return reached, nil
			}
			rn.groupIdx, rn.shareSpent = offset+i, false
			cp, err := rn.group(ctx, groups[i], cps[i])
			cps[i] = cp
			if err != nil {
				rn.groupLimit = 0
				return reached, err
			}
			reached[i] = true
			behind[i] = rn.shareSpent
		}
	}
	rn.groupLimit = 0
	return reached, nil
}

// track keeps the least advanced checkpoint for the run's checkpoint age.
func (rn *run) track(cp store.Checkpoint) {
	if cp.DoneThrough == 0 {
		rn.anyNever = true
		return
	}
	if rn.oldest == 0 || cp.DoneThrough < rn.oldest {
		rn.oldest = cp.DoneThrough
	}
}

// mayContinue reports whether the run may make another list request, and
// records why not.
func (rn *run) mayContinue(ctx context.Context) bool {
	switch {
	case rn.res.Stopped != stopNone:
		return false
	case ctx.Err() != nil:
		rn.res.Stopped = outcome.StopCanceled
	case !rn.stopAt.IsZero() && !rn.r.cfg.Now().Before(rn.stopAt):
		rn.res.Stopped = outcome.StopDeadline
	case rn.res.Pages >= rn.maxPages():
		rn.res.Stopped = outcome.StopMaxPages
	case rn.groupLimit > 0 && rn.res.Pages >= rn.groupLimit:
		// The group's share is spent, not the run's budget: the group
		// stops here (its checkpoint holds the cursor) and the run goes on.
		rn.shareSpent = true
	default:
		return true
	}
	return false
}

func (rn *run) maxPages() int {
	if rn.opts.MaxPages > 0 {
		return rn.opts.MaxPages
	}
	return rn.r.cfg.MaxPages
}

// save writes the checkpoint, or reports that another run moved it
// (store.ErrCheckpointMoved).
func (rn *run) save(ctx context.Context, prev, next store.Checkpoint) (store.Checkpoint, error) {
	next.UpdatedAt, next.RunID = rn.r.cfg.Now(), rn.res.RunID
	return rn.r.cfg.Checkpoints.Save(ctx, prev, next)
}

// LoadCheckpoint reads a group's checkpoint, strongly consistent; a group
// never reconciled has the zero Checkpoint (with its name and types).
func (r *Reconciler) LoadCheckpoint(ctx context.Context, g Group) (store.Checkpoint, error) {
	cp, err := r.cfg.Checkpoints.Load(ctx, g.Checkpoint)
	if err != nil {
		return store.Checkpoint{}, err
	}
	cp.Types = g.Types
	return cp, nil
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

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}
