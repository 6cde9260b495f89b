package cli

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// ReplayResultJSON is what replay did with one event.
type ReplayResultJSON struct {
	ID     string `json:"id"`
	Status string `json:"status,omitempty"` // before the replay
	// Action is internal/ops's: enqueued, reopened_and_enqueued,
	// would_enqueue, would_reopen, skipped, not_found or error.
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
	s, err := a.open(ctx, withEvents|withQueue)
	if err != nil {
		return err
	}
	out := ReplayJSON{Results: []ReplayResultJSON{}}
	if !o.explicit {
		sel, err := a.selection(o)
		if err != nil {
			return err
		}
		if ids, out.More, err = s.Select(ctx, sel); err != nil {
			return err
		}
	}
	b := a.progress(len(ids), "replaying")
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		r, _ := s.Replay(ctx, event.ProviderStripe, id, o.force, o.dryRun)
		out.Results = append(out.Results, ReplayResultJSON{ID: r.ID, Status: r.Status, Action: r.Action, Detail: r.Detail})
		switch {
		case r.Done:
			out.Enqueued++
		case r.Action == ops.ActionSkipped:
			out.Skipped++
		default:
			out.Failed++
		}
		_ = b.Add(1)
		if !o.asJSON {
			// As it goes: a long replay shows its progress in its output.
			fmt.Fprintf(a.stdout, "%s  %s  %s: %s\n", r.ID, a.status(cmp.Or(r.Status, "-")), a.action(r.Action), r.Detail)
		}
	}
	_ = b.Finish()
	if err := a.printReplay(out, o); err != nil {
		return err
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

// selection reads replay's --status, --since, --type and --max.
func (a *app) selection(o replayOpts) (ops.Selection, error) {
	st, err := event.ParseStatus(o.status)
	if err != nil {
		return ops.Selection{}, usagef("--status: %w", err)
	}
	if o.max < 1 {
		return ops.Selection{}, usagef("--max must be at least 1")
	}
	now := a.now()
	since, err := parseSince(o.since, now)
	if err != nil {
		return ops.Selection{}, err
	}
	return ops.Selection{Status: st, Since: since, Until: now, Type: o.typ, Max: o.max}, nil
}

// printReplay prints the JSON, or the summary after the lines printed as
// the replay went.
func (a *app) printReplay(out ReplayJSON, o replayOpts) error {
	if o.asJSON {
		return writeJSON(a.stdout, out)
	}
	verb := "enqueued"
	if o.dryRun {
		verb = "would enqueue"
	}
	fmt.Fprintf(a.stdout, "\n%s %d, skipped %d, failed %d", verb, out.Enqueued, out.Skipped, out.Failed)
	if out.More {
		fmt.Fprintf(a.stdout, " (stopped at --max %d; more events match)", o.max)
	}
	fmt.Fprintln(a.stdout)
	return nil
}

func (a *app) action(act string) string {
	switch act {
	case ops.ActionEnqueued, ops.ActionReopened, ops.ActionWouldEnqueue, ops.ActionWouldReopen:
		return a.paint(green, act)
	case ops.ActionSkipped:
		return a.paint(yellow, act)
	}
	return a.paint(red, act)
}
