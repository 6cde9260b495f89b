package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// What replay did with one event (ReplayResultJSON.Action).
const (
	ActionEnqueued     = "enqueued"
	ActionReopened     = "reopened_and_enqueued"
	ActionWouldEnqueue = "would_enqueue" // --dry-run
	ActionWouldReopen  = "would_reopen"  // --dry-run --force
	ActionSkipped      = "skipped"
	ActionNotFound     = "not_found"
	ActionError        = "error"
)

// ReplayResultJSON is what replay did with one event.
type ReplayResultJSON struct {
	ID     string `json:"id"`
	Status string `json:"status,omitempty"` // before the replay
	Action string `json:"action"`
	Detail string `json:"detail"`
}

// ReplayJSON is the stable JSON shape of inboxctl replay --json.
type ReplayJSON struct {
	Results  []ReplayResultJSON `json:"results"`
	Enqueued int                `json:"enqueued"`
	Skipped  int                `json:"skipped"`
	Failed   int                `json:"failed"`
	// More is true when --status matched more events than --max.
	More bool `json:"more"`
}

type replayOpts struct {
	// provider of the events named; event.ProviderStripe when empty.
	provider              string
	status, since, typ    string
	max                   int
	force, dryRun, asJSON bool
	explicit              bool
}

func (a *app) replayCmd() *cobra.Command {
	var o replayOpts
	cmd := &cobra.Command{
		Use:   "replay <event-id>... | replay --status <status> [--since 24h]",
		Short: "Put events back on the webhook queue for the processor",
		Long: `replay re-enqueues events: a pointer to each record goes on the webhook
queue, as the receiver sends it. This is safe because processing is
idempotent: the processor claims a record only in a claimable status, and
applies each event at most once.

What happens by status:
  received, failed, dead_lettered   enqueued; the processor claims it
  processing                        enqueued if its lease expired; skipped while a worker holds it
  processed                         enqueued; the processor acknowledges it as a duplicate, no second effect
  ignored                           skipped: its type is not handled, nothing would process it
  failed_permanent                  skipped: the processor will not claim it; with --force it is
                                    first moved back to failed (a conditional update), then enqueued

Exit code 1 when an event named on the command line was not enqueued, or
an enqueue failed.`,
		Example: `  inboxctl replay evt_1Q2w3e4r5t6y7u8i evt_9o8i7u6y5t4r3e2w
  inboxctl replay --status failed --since 24h
  inboxctl replay --status dead_lettered --since 7d --type invoice.paid --dry-run
  inboxctl replay --force evt_1Q2w3e4r5t6y7u8i   # failed_permanent, after fixing the cause`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, ids []string) error {
			switch {
			case len(ids) == 0 && o.status == "":
				return usagef("name the events to replay, or select them with --status (and --since)")
			case len(ids) > 0 && o.status != "":
				return usagef("give event ids or --status, not both")
			case len(ids) > 0 && (cmd.Flags().Changed("since") || o.typ != ""):
				return usagef("--since and --type select events with --status; they do not apply to event ids")
			}
			o.explicit = len(ids) > 0
			return a.replay(cmd.Context(), ids, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.status, "status", "", "replay the events in this status ("+statusNames()+")")
	f.StringVar(&o.since, "since", "24h", "with --status: events received this far back (24h, 90m, 7d, or an RFC 3339 time)")
	f.StringVar(&o.typ, "type", "", "with --status: only events of this type")
	f.IntVar(&o.max, "max", 1000, "with --status: replay at most N events")
	f.BoolVar(&o.force, "force", false, "move failed_permanent events back to failed first, so the processor claims them")
	f.BoolVar(&o.dryRun, "dry-run", false, "say what would be done, change nothing")
	f.BoolVar(&o.asJSON, "json", false, "print the results as JSON (ReplayJSON in docs/cli.md)")
	return cmd
}

func (a *app) replay(ctx context.Context, ids []string, o replayOpts) error {
	events, err := a.eventsStore(ctx)
	if err != nil {
		return err
	}
	client, err := a.sqs(ctx)
	if err != nil {
		return err
	}
	url, err := a.queue(ctx, client)
	if err != nil {
		return err
	}
	q := &queue.Queue{Client: client, URL: url}
	out := ReplayJSON{Results: []ReplayResultJSON{}}

	if !o.explicit {
		st, err := event.ParseStatus(o.status)
		if err != nil {
			return usagef("--status: %w", err)
		}
		if o.max < 1 {
			return usagef("--max must be at least 1")
		}
		now := a.now()
		since, err := parseSince(o.since, now)
		if err != nil {
			return err
		}
		cursor := ""
		for {
			page, err := events.List(ctx, store.Query{Status: st, Since: since, Until: now, Type: o.typ, Limit: min(100, o.max-len(ids)), Cursor: cursor})
			if err != nil {
				return a.tableHint(events.Table, err)
			}
			for _, r := range page.Records {
				ids = append(ids, r.ID)
			}
			cursor = page.Next
			if cursor == "" {
				break
			}
			if len(ids) >= o.max {
				out.More = true
				break
			}
		}
	}

	b := a.progress(len(ids), "replaying")
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		r := a.replayOne(ctx, events, q, id, o)
		out.Results = append(out.Results, r)
		switch r.Action {
		case ActionEnqueued, ActionReopened, ActionWouldEnqueue, ActionWouldReopen:
			out.Enqueued++
		case ActionSkipped:
			out.Skipped++
		default:
			out.Failed++
		}
		_ = b.Add(1)
		if !o.asJSON {
			// As it goes: a long replay shows its progress in its output.
			fmt.Fprintf(a.stdout, "%s  %s  %s: %s\n", r.ID, a.status(firstOf(r.Status, "-")), a.action(r.Action), r.Detail)
		}
	}
	_ = b.Finish()
	if o.asJSON {
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else {
		verb := "enqueued"
		if o.dryRun {
			verb = "would enqueue"
		}
		fmt.Fprintf(a.stdout, "\n%s %d, skipped %d, failed %d", verb, out.Enqueued, out.Skipped, out.Failed)
		if out.More {
			fmt.Fprintf(a.stdout, " (stopped at --max %d; more events match)", o.max)
		}
		fmt.Fprintln(a.stdout)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted after %d of %d events: %w", len(out.Results), len(ids), err)
	}
	notDone := out.Failed
	if o.explicit {
		notDone += out.Skipped
	}
	if notDone > 0 {
		return failedError{fmt.Sprintf("%d event(s) not replayed (see above)", notDone)}
	}
	return nil
}

func (a *app) action(act string) string {
	switch act {
	case ActionEnqueued, ActionReopened, ActionWouldEnqueue, ActionWouldReopen:
		return a.paint(green, act)
	case ActionSkipped:
		return a.paint(yellow, act)
	}
	return a.paint(red, act)
}

// replayOne decides, from the record as it stands now (a strongly
// consistent read, not the index), what to do with one event, and does it.
func (a *app) replayOne(ctx context.Context, events *store.Events, q *queue.Queue, id string, o replayOpts) ReplayResultJSON {
	res := ReplayResultJSON{ID: id}
	rec, err := events.Get(ctx, firstOf(o.provider, event.ProviderStripe), id)
	if errors.Is(err, store.ErrNotFound) {
		res.Action, res.Detail = ActionNotFound, "no such event in "+events.Table
		return res
	}
	if err != nil {
		res.Action, res.Detail = ActionError, a.tableHint(events.Table, err).Error()
		return res
	}
	res.Status = string(rec.Status)
	now := a.now()
	enqueue := func(detail string) ReplayResultJSON {
		if o.dryRun {
			res.Action, res.Detail = ActionWouldEnqueue, detail
			return res
		}
		if err := q.Send(ctx, event.PointerTo(rec)); err != nil {
			res.Action, res.Detail = ActionError, a.hint(err).Error()
			return res
		}
		res.Action, res.Detail = ActionEnqueued, detail
		return res
	}
	switch rec.Status {
	case event.StatusReceived:
		return enqueue("the processor claims it")
	case event.StatusFailed:
		return enqueue("the processor claims it again; last error: " + firstOf(rec.LastError, "none recorded"))
	case event.StatusDeadLettered:
		return enqueue("the processor claims it again; its old message may still be in the DLQ, and redriving it later is harmless")
	case event.StatusProcessing:
		if rec.LeaseUntil.After(now) {
			res.Action = ActionSkipped
			res.Detail = fmt.Sprintf("a worker holds it until %s (%s); replay it after that if it stays stuck", when(rec.LeaseUntil), ago(now, rec.LeaseUntil))
			return res
		}
		return enqueue(fmt.Sprintf("its lease expired %s: the processor claims it again", ago(now, rec.LeaseUntil)))
	case event.StatusProcessed:
		return enqueue(fmt.Sprintf("already processed (%s): the processor acknowledges it as a duplicate, with no second effect", firstOf(string(rec.Outcome), "no outcome")))
	case event.StatusIgnored:
		res.Action, res.Detail = ActionSkipped, "its type is not handled by this deployment, so nothing would process it (add the type to EVENT_TYPES or an effect first)"
		return res
	case event.StatusFailedPermanent:
		if !o.force {
			res.Action = ActionSkipped
			res.Detail = fmt.Sprintf("failed permanently (%s); the processor will not claim it: fix the cause, then replay it with --force", firstOf(rec.LastError, "no error recorded"))
			return res
		}
		if o.dryRun {
			res.Action, res.Detail = ActionWouldReopen, "would move it back to failed, then enqueue it"
			return res
		}
		if _, err := events.Reopen(ctx, rec.Provider, rec.ID, now); err != nil {
			var nc *store.NotClaimableError
			if errors.As(err, &nc) {
				res.Status = string(nc.Current.Status)
				res.Action, res.Detail = ActionSkipped, "its status changed meanwhile to "+string(nc.Current.Status)+": run replay again"
				return res
			}
			res.Action, res.Detail = ActionError, a.tableHint(events.Table, err).Error()
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
	res.Action, res.Detail = ActionError, "unknown status "+string(rec.Status)
	return res
}
