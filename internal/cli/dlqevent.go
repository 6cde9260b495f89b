package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// The dead-letter queue's operations on named events: dlq discard and
// dlq redrive --event. SQS cannot address a message by its content, so
// both first find the event's messages: they receive the queue's messages,
// keeping each hidden while they look, and make every message they do not
// act on visible again when they are done (even on Ctrl-C; if inboxctl is
// killed, after findVisibility by themselves). A message move task moves a
// whole queue, never one event, so these take the same path on every
// endpoint.

// findVisibility hides the messages received while looking for an
// event's: long enough to search, record and act on them.
const findVisibility = 300

// findBudget bounds the search, well inside findVisibility, so that every
// message found is still hidden when it is acted on.
const findBudget = 4 * time.Minute

// dlqFound is what findEvents received from the dead-letter queue.
type dlqFound struct {
	// byEvent holds the messages pointing to each event asked for (more
	// than one when a redrive left a copy that failed again).
	byEvent map[string][]sqstypes.Message
	// others are every other message received: release makes them
	// visible again.
	others []sqstypes.Message
}

// findEvents receives the dead-letter queue's messages until it is empty
// (or findBudget is spent) and sorts those pointing to ids from the rest.
// The whole queue is searched, so every copy of an event's pointer is
// found. The caller must release f.others, and any found message it does
// not delete, even when findEvents fails.
func (a *app) findEvents(ctx context.Context, client SQS, dlq string, ids []string) (*dlqFound, error) {
	return a.findMessages(ctx, client, dlq, ids, eventIDOf)
}

// eventIDOf is the id of the event a dead-lettered message points to ("" for
// a message that is no pointer).
func eventIDOf(m sqstypes.Message) string {
	if p, err := queue.Decode(aws.ToString(m.Body)); err == nil {
		return p.ID
	}
	return ""
}

// messageIDOf is a message's own id: the console's redrive of one message.
func messageIDOf(m sqstypes.Message) string { return aws.ToString(m.MessageId) }

// findMessages is findEvents for any key of a message: it sorts the
// messages whose keyOf is one of keys (in f.byEvent, by key) from the rest.
func (a *app) findMessages(ctx context.Context, client SQS, dlq string, keys []string, keyOf func(sqstypes.Message) string) (*dlqFound, error) {
	f := &dlqFound{byEvent: map[string][]sqstypes.Message{}}
	seen := map[string]bool{}
	deadline := a.now().Add(findBudget)
	for {
		if a.now().After(deadline) {
			return f, fmt.Errorf("searched %d message(s) of the dead-letter queue in %s and stopped, so that none of them reappears while in use: "+
				"run the command again (what was not found is still in the queue)", len(seen), findBudget)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(dlq),
			MaxNumberOfMessages: 10,
			VisibilityTimeout:   findVisibility,
			// Long polling asks every SQS server: an empty answer means no
			// visible message is left, where a short poll samples a few.
			WaitTimeSeconds:             1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return f, a.hint(fmt.Errorf("receive from the dead-letter queue: %w", err))
		}
		if len(out.Messages) == 0 {
			return f, nil
		}
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				// Received again: its earlier receipt no longer holds it.
				f.others = append(f.others, m)
				continue
			}
			seen[id] = true
			if k := keyOf(m); k != "" && slices.Contains(keys, k) {
				f.byEvent[k] = append(f.byEvent[k], m)
				continue
			}
			f.others = append(f.others, m)
		}
	}
}

// DiscardResultJSON is what dlq discard did about one event.
type DiscardResultJSON struct {
	ID string `json:"id"`
	// Status is the record's status before the discard, StatusAfter after
	// it (dead_lettered for a record that was still pending).
	Status      string `json:"status,omitempty"`
	StatusAfter string `json:"status_after,omitempty"`
	// Action: discarded, not_found (no record), no_message (nothing in
	// the DLQ points to it), error.
	Action   string `json:"action"`
	Messages int    `json:"messages"`
	Detail   string `json:"detail,omitempty"`
}

// DiscardJSON is the stable JSON shape of inboxctl dlq discard --json.
type DiscardJSON struct {
	Reason    string              `json:"reason"`
	Results   []DiscardResultJSON `json:"results"`
	Discarded int                 `json:"discarded"`
	Failed    int                 `json:"failed"`
}

func (a *app) dlqDiscardCmd() *cobra.Command {
	var reason string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "discard <event-id>... --reason TEXT",
		Short: "Remove an event's messages from the dead-letter queue, recording why on the event",
		Long: `discard removes the messages that point to each event from the dead-letter
queue, for an event nobody should process again (a poison message, a test
event, one already handled by hand). The decision is recorded on the event's
record first, with --reason and the time (inboxctl event shows them), then
the messages are deleted: a discard is never silent.

A record still pending (received, failed, or processing with no live worker)
becomes dead_lettered, so the reconciler's stuck sweep does not send it
through again; any other status is kept. The event stays replayable:
inboxctl replay processes it if you change your mind.

An event with no record (expired by its TTL) is refused: there is nothing to
record the decision on. Redrive it instead (dlq redrive --event): the
processor acknowledges a pointer to no record as missing, in its log.`,
		Example: `  inboxctl dlq discard evt_1Nq7 --reason "test event sent to live by mistake"`,
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("--reason is required: say why the event is not processed; it is kept on the event's record")
			}
			return a.discard(cmd.Context(), slices.Compact(slices.Sorted(slices.Values(ids))), strings.TrimSpace(reason), asJSON)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the event is not processed (required; kept on its record)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON (DiscardJSON in docs/cli.md)")
	return cmd
}

func (a *app) discard(ctx context.Context, ids []string, reason string, asJSON bool) error {
	client, err := a.sqs(ctx)
	if err != nil {
		return err
	}
	_, dlq, err := a.queues(ctx, client)
	if err != nil {
		return err
	}
	events, err := a.eventsStore(ctx)
	if err != nil {
		return err
	}
	res := DiscardJSON{Reason: reason, Results: []DiscardResultJSON{}}
	// The record first: with none, there is nothing to record the
	// decision on, and the message is left alone.
	var wanted []string
	before := map[string]event.Status{}
	for _, id := range ids {
		rec, err := events.Get(ctx, event.ProviderStripe, id)
		var pe *store.PayloadError
		if errors.As(err, &pe) {
			rec, err = pe.Record, nil
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			res.Results = append(res.Results, DiscardResultJSON{ID: id, Action: "not_found",
				Detail: "no record (expired by its TTL?): nothing to record the discard on; `inboxctl dlq redrive --event " + id + "` instead, which the processor acknowledges as missing"})
		case err != nil:
			return a.tableHint(events.Table, err)
		default:
			before[id] = rec.Status
			wanted = append(wanted, id)
		}
	}
	var found *dlqFound
	if len(wanted) > 0 {
		found, err = a.findEvents(ctx, client, dlq, wanted)
		// Visible again whatever happens next, even after Ctrl-C; the
		// messages deleted below are taken out of the list first.
		defer func() { a.releaseFound(ctx, client, dlq, found) }()
		if err != nil {
			return err
		}
	}
	for _, id := range wanted {
		r := DiscardResultJSON{ID: id, Status: string(before[id])}
		msgs := found.byEvent[id]
		if len(msgs) == 0 {
			r.Action, r.Detail = "no_message", "nothing in the dead-letter queue points to it; nothing changed"
			res.Results = append(res.Results, r)
			continue
		}
		rec, err := events.Discard(ctx, event.ProviderStripe, id, reason, a.now())
		if err != nil {
			r.Action, r.Detail = "error", fmt.Sprintf("record the discard: %v; the message was left in the dead-letter queue", err)
			res.Results = append(res.Results, r)
			continue
		}
		r.StatusAfter = string(rec.Status)
		n, err := deleteMessages(ctx, client, dlq, msgs)
		if err == nil {
			delete(found.byEvent, id) // deleted: nothing to release
		}
		r.Messages = n
		if err != nil {
			r.Action, r.Detail = "error", fmt.Sprintf("recorded on the event, but %v: run the discard again", err)
		} else {
			r.Action, r.Detail = "discarded", fmt.Sprintf("%d message(s) deleted from the dead-letter queue; the reason is on the event's record", n)
		}
		res.Results = append(res.Results, r)
	}
	for _, r := range res.Results {
		if r.Action == "discarded" {
			res.Discarded++
		} else {
			res.Failed++
		}
	}
	if asJSON {
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	} else {
		var rows [][]string
		for _, r := range res.Results {
			st := a.status(r.Status)
			if r.StatusAfter != "" && r.StatusAfter != r.Status {
				st += " -> " + a.status(r.StatusAfter)
			}
			rows = append(rows, []string{r.ID, st, r.Action + ": " + r.Detail})
		}
		if err := a.table([]string{"EVENT_ID", "STATUS", "RESULT"}, rows); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "\n%d discarded, %d not; reason: %s\n", res.Discarded, res.Failed, reason)
	}
	if res.Failed > 0 {
		return failedError{fmt.Sprintf("%d of %d event(s) not discarded", res.Failed, len(ids))}
	}
	return nil
}

// deleteMessages deletes msgs from url, ten at a time, and returns how
// many were deleted.
func deleteMessages(ctx context.Context, client SQS, url string, msgs []sqstypes.Message) (int, error) {
	// Finish even after Ctrl-C: the decision is recorded by now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n := 0
	for start := 0; start < len(msgs); start += 10 {
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range msgs[start:min(start+10, len(msgs))] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		out, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			return n, fmt.Errorf("delete from the dead-letter queue: %w", err)
		}
		n += len(out.Successful)
		if len(out.Failed) > 0 {
			return n, fmt.Errorf("delete from the dead-letter queue: %s", aws.ToString(out.Failed[0].Message))
		}
	}
	return n, nil
}

// releaseFound makes visible again every message findEvents received and
// nothing deleted.
func (a *app) releaseFound(ctx context.Context, client SQS, dlq string, f *dlqFound) {
	if f == nil {
		return
	}
	msgs := f.others
	for _, ms := range f.byEvent {
		msgs = append(msgs, ms...)
	}
	release(context.WithoutCancel(ctx), client, dlq, msgs)
}

// redriveEvents moves the messages that point to ids from the
// dead-letter queue to the webhook queue, as moveEach does (send, then
// delete what was sent), and leaves every other message where it was.
func (a *app) redriveEvents(ctx context.Context, client SQS, dlq, main string, ids []string) (moved int, missing []string, err error) {
	return a.redriveKeyed(ctx, client, dlq, main, ids, eventIDOf)
}

// redriveMessage moves the dead-lettered message id back to the webhook
// queue: the console's "redrive" of one message. Moved is 0 when the
// message is no longer in the dead-letter queue.
func (a *app) redriveMessage(ctx context.Context, id string) (RedriveJSON, error) {
	client, err := a.sqs(ctx)
	if err != nil {
		return RedriveJSON{}, err
	}
	main, dlq, err := a.queues(ctx, client)
	if err != nil {
		return RedriveJSON{}, err
	}
	res := RedriveJSON{Method: "receive_send_delete", From: dlq, To: main}
	if res.Moved, _, err = a.redriveKeyed(ctx, client, dlq, main, []string{id}, messageIDOf); err != nil {
		return res, err
	}
	if res.Remaining, err = approxMessages(ctx, client, dlq); err != nil {
		return res, a.hint(err)
	}
	return res, nil
}

// redriveKeyed is redriveEvents for any key of a message (findMessages):
// it moves the messages whose keyOf is one of keys and returns the keys no
// message had.
func (a *app) redriveKeyed(ctx context.Context, client SQS, dlq, main string, ids []string, keyOf func(sqstypes.Message) string) (moved int, missing []string, err error) {
	found, err := a.findMessages(ctx, client, dlq, ids, keyOf)
	defer func() { a.releaseFound(ctx, client, dlq, found) }()
	if err != nil {
		return 0, nil, err
	}
	var msgs []sqstypes.Message
	for _, id := range ids {
		if len(found.byEvent[id]) == 0 {
			missing = append(missing, id)
		}
		msgs = append(msgs, found.byEvent[id]...)
	}
	// From here moveBatch owns them: it makes visible again what it did
	// not send, and deletes what it sent.
	found.byEvent = nil
	for start := 0; start < len(msgs); start += 10 {
		n, err := a.moveBatch(ctx, client, dlq, main, msgs[start:min(start+10, len(msgs))])
		moved += n
		if err != nil {
			found.others = append(found.others, msgs[min(start+10, len(msgs)):]...)
			return moved, missing, fmt.Errorf("%w\n%d message(s) moved before it stopped; nothing was lost (at worst a message is in both queues, which the processor absorbs): run the redrive again", err, moved)
		}
	}
	return moved, missing, nil
}

// redriveNamed is dlq redrive --event: the named events' messages only.
func (a *app) redriveNamed(ctx context.Context, client SQS, o redriveOpts, res RedriveJSON) error {
	ids := slices.Compact(slices.Sorted(slices.Values(o.events)))
	res.Method, res.Events = "receive_send_delete", ids
	moved, missing, err := a.redriveEvents(ctx, client, res.From, res.To, ids)
	if err != nil {
		return err
	}
	res.Moved = moved
	if res.Remaining, err = approxMessages(ctx, client, res.From); err != nil {
		return a.hint(err)
	}
	if o.asJSON {
		if err := writeJSON(a.stdout, res); err != nil {
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
