package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// EventSummaryJSON is the stable JSON shape of one event in a list
// (inboxctl events --json).
type EventSummaryJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	StatusAt   string `json:"status_at"`
	Source     string `json:"source"`
	Attempts   int    `json:"attempts"`
	Outcome    string `json:"outcome,omitempty"`
	LastError  string `json:"last_error,omitempty"`
	ReceivedAt string `json:"received_at"`
	Created    int64  `json:"created"`
	ObjectID   string `json:"object_id,omitempty"`
	// Account is the connected account the event is of (Stripe Connect).
	Account string `json:"account,omitempty"`
}

// EventListJSON is the stable JSON shape of inboxctl events --json. Next,
// when not empty, is the --next of the following page.
type EventListJSON struct {
	Events []EventSummaryJSON `json:"events"`
	Next   string             `json:"next,omitempty"`
}

func summary(r event.Record) EventSummaryJSON {
	return EventSummaryJSON{
		ID: r.ID, Type: r.Type, Status: string(r.Status), StatusAt: ts(r.StatusAt), Source: string(r.Source),
		Attempts: r.Attempts, Outcome: string(r.Outcome), LastError: r.LastError, ReceivedAt: ts(r.ReceivedAt),
		Created: r.Created, ObjectID: r.ObjectID, Account: r.Account,
	}
}

type eventsOpts struct {
	status, since, typ, next, account string
	limit                             int
	asJSON, failing                   bool
}

func (a *app) eventsCmd() *cobra.Command {
	var o eventsOpts
	cmd := &cobra.Command{
		Use:   "events [--status <status> | --failing] [--since 24h] [--type <event-type>]",
		Short: "List the most recent events, or those in a status, newest first, a page at a time",
		Long: `events lists the events received within --since, newest first: every
event, or with --status only those whose current status it is, or with
--failing those in any status that needs a person (` + failingNames() + `).
It never
scans the table: recent events and processed ones come from the by_day
index, the other statuses from the sparse unprocessed index, which holds
only them (docs/data-model.md).

Statuses: ` + statusNames() + `.

A full page ends with the command for the next one (--next <cursor>).`,
		Example: `  inboxctl events
  inboxctl events --failing
  inboxctl events --status failed
  inboxctl events --status dead_lettered --since 7d --type invoice.paid
  inboxctl events --status processed --since 2h --limit 100 --json
  inboxctl events --account acct_1Nv0FGQ9RKHgCVdK --status failed`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.events(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.status, "status", "", "only events in this status (default: every status)")
	f.BoolVar(&o.failing, "failing", false, "only events that need a person: "+failingNames()+" (not with --status)")
	f.StringVar(&o.since, "since", "24h", "how far back: a duration (24h, 90m, 7d) or an RFC 3339 time")
	f.StringVar(&o.typ, "type", "", "only events of this type")
	f.StringVar(&o.account, "account", "", "only events of this connected account (acct_..., Stripe Connect)")
	f.IntVar(&o.limit, "limit", store.DefaultPageSize, "page size")
	f.StringVar(&o.next, "next", "", "cursor of the next page, from the previous page")
	f.BoolVar(&o.asJSON, "json", false, "print the page as JSON (EventListJSON in docs/cli.md)")
	return cmd
}

func failingNames() string {
	names := make([]string, len(event.Failing))
	for i, s := range event.Failing {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func statusNames() string {
	names := make([]string, len(event.Statuses))
	for i, s := range event.Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func (a *app) events(ctx context.Context, o eventsOpts) error {
	var st event.Status
	if o.status != "" {
		var err error
		if st, err = event.ParseStatus(o.status); err != nil {
			return usagef("--status: %w", err)
		}
	}
	if o.failing && o.status != "" {
		return usagef("--failing and --status: --failing already lists %s; pick one", failingNames())
	}
	if o.limit < 1 || o.limit > store.MaxPageSize {
		return usagef("--limit %d: want 1 to %d", o.limit, store.MaxPageSize)
	}
	now := a.now()
	since, err := parseSince(o.since, now)
	if err != nil {
		return err
	}
	if since.After(now) {
		return usagef("--since %s is in the future", o.since)
	}
	s, err := a.open(ctx, withEvents)
	if err != nil {
		return err
	}
	events := s.Events
	page, err := events.List(
		ctx,
		store.Query{Status: st, Failing: o.failing, Since: since, Until: now, Type: o.typ, Account: o.account, Limit: o.limit, Cursor: o.next},
	)
	if errors.Is(err, store.ErrBadCursor) {
		return usagef(
			"--next: this cursor belongs to another listing: repeat the --status or --failing, --since, --type and --account of the page that printed it",
		)
	}
	if err != nil {
		return a.tableHint(events.Table, err)
	}
	if o.asJSON {
		out := EventListJSON{Events: []EventSummaryJSON{}, Next: page.Next}
		for _, r := range page.Records {
			out.Events = append(out.Events, summary(r))
		}
		return writeJSON(a.stdout, out)
	}
	return a.printEvents(page, o, st, since, now)
}

// printEvents prints a page of events as a table, with the command that
// lists the next page, or says there is none.
func (a *app) printEvents(page store.Page, o eventsOpts, st event.Status, since, now time.Time) error {
	if len(page.Records) == 0 {
		if o.failing {
			fmt.Fprintf(a.stdout, "no failing events (%s) since %s\n", failingNames(), when(since))
		} else if st == "" {
			fmt.Fprintf(a.stdout, "no events since %s\n", when(since))
		} else {
			fmt.Fprintf(a.stdout, "no %s events since %s\n", st, when(since))
		}
		return nil
	}
	var rows [][]string
	for _, r := range page.Records {
		rows = append(rows, []string{
			when(r.ReceivedAt), ago(now, r.ReceivedAt), r.ID, r.Type, a.status(string(r.Status)), string(r.Source),
			fmt.Sprint(r.Attempts), string(r.Outcome), clip(r.LastError, 60),
		})
	}
	if err := a.table([]string{"RECEIVED_AT", "AGE", "ID", "TYPE", "STATUS", "SOURCE", "ATTEMPTS", "OUTCOME", "LAST_ERROR"}, rows); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(a.stdout, "\nnext page: %s --next %s\n", nextEvents(o, st, since), page.Next)
	}
	return nil
}

// nextEvents is the command that lists the page after one: the same
// filters, the window's start as an absolute time.
func nextEvents(o eventsOpts, st event.Status, since time.Time) string {
	// The absolute time keeps the window of the next page where it was.
	next := "inboxctl events"
	if st != "" {
		next += " --status " + string(st)
	}
	if o.failing {
		next += " --failing"
	}
	next += " --since " + when(since)
	if o.typ != "" {
		next += " --type " + o.typ
	}
	if o.account != "" {
		next += " --account " + o.account
	}
	if o.limit != store.DefaultPageSize {
		next += fmt.Sprintf(" --limit %d", o.limit)
	}
	return next
}
