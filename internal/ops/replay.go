package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/timetext"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// What a replay did with one event (ReplayResult.Action).
const (
	ActionEnqueued     = "enqueued"
	ActionReopened     = "reopened_and_enqueued"
	ActionWouldEnqueue = "would_enqueue" // a dry run
	ActionWouldReopen  = "would_reopen"  // a dry run with force
	ActionSkipped      = "skipped"
	ActionNotFound     = "not_found"
	ActionError        = "error"
)

// ReplayResult is what a replay did with one event.
type ReplayResult struct {
	ID string
	// Status is the event's status before the replay.
	Status string
	// Action is one of the Action constants.
	Action string
	Detail string
	// Done: the event was enqueued, or would be by a dry run.
	Done bool
}

// Replay replays one event of provider (Stripe when empty), as `inboxctl
// replay` does: it decides from the record as it stands now (a strongly
// consistent read, not the index) and puts a pointer to it on the webhook
// queue, which is safe because processing is idempotent. force first moves
// a failed_permanent event back to failed (a conditional update); dryRun
// only says what it would do. The outcome is in the result; the error is
// always nil (the console's Actions).
func (s *Stack) Replay(ctx context.Context, provider, id string, force, dryRun bool) (ReplayResult, error) {
	r := s.replay(ctx, provider, id, force, dryRun)
	switch r.Action {
	case ActionEnqueued, ActionReopened, ActionWouldEnqueue, ActionWouldReopen:
		r.Done = true
	}
	return r, nil
}

func (s *Stack) replay(ctx context.Context, provider, id string, force, dryRun bool) ReplayResult {
	res := ReplayResult{ID: id}
	if provider == "" {
		provider = event.ProviderStripe
	}
	rec, err := s.Events.Get(ctx, provider, id)
	if errors.Is(err, store.ErrNotFound) {
		res.Action, res.Detail = ActionNotFound, "no such event in "+s.Events.Table
		return res
	}
	if err != nil {
		res.Action, res.Detail = ActionError, s.explain(s.Events.Table, err).Error()
		return res
	}
	res.Status = string(rec.Status)
	now := s.now()
	enqueue := func(detail string) ReplayResult {
		if dryRun {
			res.Action, res.Detail = ActionWouldEnqueue, detail
			return res
		}
		q := &queue.Queue{Client: s.SQS, URL: s.Queue}
		if err := q.Send(ctx, event.PointerTo(rec)); err != nil {
			res.Action, res.Detail = ActionError, s.explain("", err).Error()
			return res
		}
		res.Action, res.Detail = ActionEnqueued, detail
		return res
	}
	switch rec.Status {
	case event.StatusReceived:
		return enqueue("the processor claims it")
	case event.StatusFailed:
		return enqueue("the processor claims it again; last error: " + cmp.Or(rec.LastError, "none recorded"))
	case event.StatusDeadLettered:
		return enqueue("the processor claims it again; its old message may still be in the DLQ, and redriving it later is harmless")
	case event.StatusProcessing:
		if rec.LeaseUntil.After(now) {
			res.Action = ActionSkipped
			res.Detail = fmt.Sprintf("a worker holds it until %s (%s); replay it after that if it stays stuck",
				timetext.When(rec.LeaseUntil), timetext.Ago(now, rec.LeaseUntil))
			return res
		}
		return enqueue(fmt.Sprintf("its lease expired %s: the processor claims it again", timetext.Ago(now, rec.LeaseUntil)))
	case event.StatusProcessed:
		return enqueue(fmt.Sprintf("already processed (%s): the processor acknowledges it as a duplicate, with no second effect",
			cmp.Or(string(rec.Outcome), "no outcome")))
	case event.StatusIgnored:
		res.Action = ActionSkipped
		res.Detail = "its type is not handled by this deployment, so nothing would process it (add the type to EVENT_TYPES or an effect first)"
		return res
	case event.StatusFailedPermanent:
		return s.reopen(ctx, rec, res, force, dryRun, now, enqueue)
	}
	res.Action, res.Detail = ActionError, "unknown status "+string(rec.Status)
	return res
}

// reopen replays a failed_permanent event: with force, moved back to
// failed first, then enqueued.
func (s *Stack) reopen(ctx context.Context, rec event.Record, res ReplayResult, force, dryRun bool, now time.Time,
	enqueue func(string) ReplayResult) ReplayResult {
	if !force {
		res.Action = ActionSkipped
		res.Detail = fmt.Sprintf("failed permanently (%s); the processor will not claim it: fix the cause, then replay it with --force",
			cmp.Or(rec.LastError, "no error recorded"))
		return res
	}
	if dryRun {
		res.Action, res.Detail = ActionWouldReopen, "would move it back to failed, then enqueue it"
		return res
	}
	if _, err := s.Events.Reopen(ctx, rec.Provider, rec.ID, now); err != nil {
		var nc *store.NotClaimableError
		if errors.As(err, &nc) {
			res.Status = string(nc.Current.Status)
			res.Action, res.Detail = ActionSkipped, "its status changed meanwhile to "+string(nc.Current.Status)+": run replay again"
			return res
		}
		res.Action, res.Detail = ActionError, s.explain(s.Events.Table, err).Error()
		return res
	}
	r := enqueue("moved back to failed (--force); the processor claims it again")
	switch r.Action {
	case ActionEnqueued:
		r.Action = ActionReopened
	case ActionError:
		r.Detail = "moved back to failed, but not enqueued (" + r.Detail + "): replay it again"
	}
	return r
}

// Selection picks the events a replay by status covers.
type Selection struct {
	Status event.Status
	// Since and Until bound when the events were received.
	Since, Until time.Time
	// Type, when set, keeps the events of that type only.
	Type string
	// Max is the most ids returned.
	Max int
}

// Select lists the ids of the events sel picks, newest first, from the
// store's listing (its index), at most sel.Max; more reports that more
// events match.
func (s *Stack) Select(ctx context.Context, sel Selection) (ids []string, more bool, err error) {
	cursor := ""
	for {
		page, err := s.Events.List(ctx, store.Query{Status: sel.Status, Since: sel.Since, Until: sel.Until, Type: sel.Type,
			Limit: min(100, sel.Max-len(ids)), Cursor: cursor})
		if err != nil {
			return nil, false, s.explain(s.Events.Table, err)
		}
		for _, r := range page.Records {
			ids = append(ids, r.ID)
		}
		cursor = page.Next
		if cursor == "" {
			return ids, false, nil
		}
		if len(ids) >= sel.Max {
			return ids, true, nil
		}
	}
}
