package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
)

// SQS is the part of *sqs.Client inboxctl uses: the operations'.
type SQS = ops.SQS

// DLQMessageJSON is one dead-lettered message and the status of the event
// it points to.
type DLQMessageJSON struct {
	MessageID string `json:"message_id"`
	SentAt    string `json:"sent_at,omitempty"`
	Provider  string `json:"provider,omitempty"`
	EventID   string `json:"event_id,omitempty"`
	Type      string `json:"type,omitempty"`
	// EventStatus is the record's status, "missing" when the store has no
	// record (expired by its TTL), "" when the body is not a pointer.
	EventStatus string `json:"event_status,omitempty"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error,omitempty"`
	// Body is set only when the message is not an event pointer.
	Body string `json:"body,omitempty"`
}

// DLQListJSON is the stable JSON shape of inboxctl dlq list --json.
// Approximate is SQS's ApproximateNumberOfMessages of the queue.
type DLQListJSON struct {
	QueueURL    string           `json:"queue_url"`
	Approximate int              `json:"approximate_messages"`
	Messages    []DLQMessageJSON `json:"messages"`
}

// RedriveJSON is the stable JSON shape of inboxctl dlq redrive --json.
type RedriveJSON struct {
	// Method is "move_task" (SQS StartMessageMoveTask) or
	// "receive_send_delete" (inboxctl moved each message itself).
	Method string `json:"method"`
	Moved  int    `json:"moved"`
	// Remaining is the DLQ's ApproximateNumberOfMessages afterwards.
	Remaining int    `json:"remaining"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Events are the events --event named, when it did.
	Events []string `json:"events,omitempty"`
}

func (a *app) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, redrive and discard the dead-letter queue's messages",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.dlqListCmd(), a.dlqRedriveCmd(), a.dlqDiscardCmd())
	return cmd
}

func (a *app) dlqListCmd() *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead-lettered messages with the status of their events, without removing them",
		Long: `list peeks at the dead-letter queue: it receives messages with a short
visibility timeout, looks up each event's record, and makes the messages
visible again at once. Nothing is deleted; if inboxctl is interrupted, the
messages reappear by themselves within 30 seconds.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usagef("--max must be at least 1")
			}
			return a.dlqList(cmd.Context(), limit, asJSON)
		},
	}
	cmd.Flags().IntVar(&limit, "max", 100, "most messages to show")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (DLQListJSON in docs/cli.md)")
	return cmd
}

func (a *app) dlqList(ctx context.Context, limit int, asJSON bool) error {
	s, err := a.open(ctx, withEvents|withDLQ)
	if err != nil {
		return err
	}
	d, err := s.DeadLetters(ctx, limit)
	if err != nil {
		return err
	}
	list := DLQListJSON{QueueURL: d.QueueURL, Approximate: d.Approximate, Messages: []DLQMessageJSON{}}
	for _, m := range d.Messages {
		list.Messages = append(list.Messages, DLQMessageJSON{
			MessageID: m.MessageID, SentAt: ts(m.SentAt), Provider: m.Provider, EventID: m.EventID, Type: m.Type,
			EventStatus: m.EventStatus, Attempts: m.Attempts, LastError: m.LastError, Body: m.Body,
		})
	}
	if asJSON {
		return writeJSON(a.stdout, list)
	}
	if len(list.Messages) == 0 {
		fmt.Fprintln(a.stdout, "the dead-letter queue is empty")
		return nil
	}
	var rows [][]string
	for _, m := range d.Messages {
		st := a.status(m.EventStatus)
		if m.Body != "" {
			st = "not a pointer: " + m.Body
		}
		rows = append(rows, []string{m.MessageID, m.EventID, m.Type, st, fmt.Sprint(m.Attempts), when(m.SentAt), clip(m.LastError, 50)})
	}
	if err := a.table([]string{"MESSAGE_ID", "EVENT_ID", "TYPE", "EVENT_STATUS", "ATTEMPTS", "SENT_AT", "LAST_ERROR"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n%d message(s) shown, about %d in the queue; `inboxctl dlq redrive` moves them back to the webhook queue\n",
		len(list.Messages), list.Approximate)
	return nil
}

type redriveOpts struct {
	max            int
	manual, asJSON bool
	// events: move only the messages of these events (--event).
	events []string
}

func (a *app) dlqRedriveCmd() *cobra.Command {
	var o redriveOpts
	cmd := &cobra.Command{
		Use:   "redrive [--max N | --event ID]",
		Short: "Move dead-lettered messages back to the webhook queue",
		Long: `redrive moves messages from the dead-letter queue back to the webhook queue,
where the processor claims their events again (dead_lettered events are
claimable).

Without --max it asks SQS to move them all (StartMessageMoveTask) and shows
its progress. Where the endpoint does not support that (moto), with --max,
or with --manual, inboxctl moves them itself, a batch at a time: it sends
each message to the webhook queue first and deletes it from the DLQ only
after the send succeeded. An interruption at any point loses nothing; at
worst a message is in both queues, and the processor acknowledges the
second copy as a duplicate.

With --event, only the messages that point to that event move (every copy
of it), the same way; the others stay in the DLQ. Repeat --event for
several events.`,
		Example: `  inboxctl dlq redrive
  inboxctl dlq redrive --event evt_1Nq7`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.max < 0 {
				return usagef("--max must not be negative")
			}
			if len(o.events) > 0 && o.max > 0 {
				return usagef("--event and --max: pass one")
			}
			return a.redrive(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.max, "max", 0, "move at most N messages (0: all); implies --manual")
	f.BoolVar(&o.manual, "manual", false, "move messages with receive/send/delete even where SQS message move tasks are supported")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON (RedriveJSON in docs/cli.md)")
	f.StringArrayVar(&o.events, "event", nil, "move only this event's messages (repeat for several); implies --manual")
	return cmd
}

func (a *app) redrive(ctx context.Context, o redriveOpts) error {
	s, err := a.open(ctx, withDLQ)
	if err != nil {
		return err
	}
	if len(o.events) > 0 {
		return a.redriveNamed(ctx, s, o)
	}
	res, err := s.RedriveAll(ctx, o.max, o.manual)
	if err != nil {
		return err
	}
	if o.asJSON {
		return writeJSON(a.stdout, redriveJSON(res))
	}
	how := "SQS message move task"
	if res.Method == ops.MethodReceiveSendDelete {
		how = "receive, send, delete"
	}
	fmt.Fprintf(a.stdout, "moved %d message(s) to the webhook queue (%s); about %d left in the dead-letter queue\n", res.Moved, how, res.Remaining)
	return nil
}

// redriveNamed is dlq redrive --event: the named events' messages only.
func (a *app) redriveNamed(ctx context.Context, s *ops.Stack, o redriveOpts) error {
	ids := slices.Compact(slices.Sorted(slices.Values(o.events)))
	res, missing, err := s.RedriveEvents(ctx, ids)
	if err != nil {
		return err
	}
	if o.asJSON {
		if err := writeJSON(a.stdout, redriveJSON(res)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "moved %d message(s) of %s to the webhook queue (receive, send, delete); about %d left in the dead-letter queue\n",
			res.Moved, strings.Join(ids, ", "), res.Remaining)
	}
	if len(missing) > 0 {
		return failedError{fmt.Sprintf("nothing in the dead-letter queue points to %s: check the id with `inboxctl dlq list`", strings.Join(missing, ", "))}
	}
	return nil
}

func redriveJSON(r ops.RedriveResult) RedriveJSON {
	return RedriveJSON{Method: r.Method, Moved: r.Moved, Remaining: r.Remaining, From: r.From, To: r.To, Events: r.Events}
}
