package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// SQS is the part of *sqs.Client inboxctl uses.
type SQS interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// DLQMessageJSON is one dead-lettered message and the status of the event
// it points to.
type DLQMessageJSON struct {
	MessageID string `json:"message_id"`
	SentAt    string `json:"sent_at,omitempty"`
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
}

func (a *app) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List and redrive the dead-letter queue",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(a.dlqListCmd(), a.dlqRedriveCmd())
	return cmd
}

// queues resolves the webhook queue and its dead-letter queue.
func (a *app) queues(ctx context.Context, client SQS) (main, dlq string, err error) {
	main, err = a.queue(ctx, client)
	if err != nil {
		return "", "", err
	}
	dlq, err = a.resolve(ctx, a.dlqURL, outDLQURL, "", "")
	if err != nil || dlq != "" {
		return main, dlq, err
	}
	// The queue's redrive policy names its DLQ: the truth, whatever the
	// naming.
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(main),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", "", a.hint(fmt.Errorf("read the redrive policy of %s: %w", main, err))
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
	}
	raw := out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if json.Unmarshal([]byte(raw), &policy) != nil || policy.Target == "" {
		return "", "", fmt.Errorf("queue %s has no redrive policy naming a dead-letter queue: pass --dlq-url", main)
	}
	name := policy.Target[strings.LastIndex(policy.Target, ":")+1:]
	q, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", "", a.hint(fmt.Errorf("find the dead-letter queue %s: %w", name, err))
	}
	return main, aws.ToString(q.QueueUrl), nil
}

func queueAttr(ctx context.Context, client SQS, url string, name sqstypes.QueueAttributeName) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{name}})
	if err != nil {
		return "", fmt.Errorf("read %s of %s: %w", name, url, err)
	}
	return out.Attributes[string(name)], nil
}

func approxMessages(ctx context.Context, client SQS, url string) (int, error) {
	v, err := queueAttr(ctx, client, url, sqstypes.QueueAttributeNameApproximateNumberOfMessages)
	if err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(v)
	return n, nil
}

// peekVisibility hides peeked messages for long enough to read them all;
// if inboxctl dies before making them visible again, they reappear on
// their own after it.
const peekVisibility = 30

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
	approx, err := approxMessages(ctx, client, dlq)
	if err != nil {
		return a.hint(err)
	}
	var msgs []sqstypes.Message
	defer func() {
		// Visible again whatever happened, even after Ctrl-C.
		release(context.WithoutCancel(ctx), client, dlq, msgs)
	}()
	seen := map[string]bool{}
	for len(msgs) < limit {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlq),
			MaxNumberOfMessages:         int32(min(10, limit-len(msgs))),
			VisibilityTimeout:           peekVisibility,
			WaitTimeSeconds:             waitSeconds(len(msgs), approx),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return a.hint(fmt.Errorf("receive from the dead-letter queue: %w", err))
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				msgs = append(msgs, m)
			}
		}
	}
	list := DLQListJSON{QueueURL: dlq, Approximate: approx, Messages: []DLQMessageJSON{}}
	for _, m := range msgs {
		j := DLQMessageJSON{MessageID: aws.ToString(m.MessageId)}
		if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			j.SentAt = ts(time.UnixMilli(ms))
		}
		p, err := queue.Decode(aws.ToString(m.Body))
		if err != nil {
			j.Body = clip(aws.ToString(m.Body), 200)
			list.Messages = append(list.Messages, j)
			continue
		}
		j.EventID, j.Type = p.ID, p.Type
		rec, err := events.Get(ctx, p.Provider, p.ID)
		var pe *store.PayloadError
		if errors.As(err, &pe) {
			rec, err = pe.Record, nil // the listing needs no payload
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			j.EventStatus = "missing"
		case err != nil:
			return a.tableHint(events.Table, err)
		default:
			j.EventStatus, j.Attempts, j.LastError = string(rec.Status), rec.Attempts, rec.LastError
		}
		list.Messages = append(list.Messages, j)
	}
	if asJSON {
		return writeJSON(a.stdout, list)
	}
	if len(list.Messages) == 0 {
		fmt.Fprintln(a.stdout, "the dead-letter queue is empty")
		return nil
	}
	var rows [][]string
	for _, m := range list.Messages {
		st := a.status(m.EventStatus)
		if m.Body != "" {
			st = "not a pointer: " + m.Body
		}
		rows = append(rows, []string{m.MessageID, m.EventID, m.Type, st, fmt.Sprint(m.Attempts), when(parseTS(m.SentAt)), clip(m.LastError, 50)})
	}
	if err := a.table([]string{"MESSAGE_ID", "EVENT_ID", "TYPE", "EVENT_STATUS", "ATTEMPTS", "SENT_AT", "LAST_ERROR"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n%d message(s) shown, about %d in the queue; `inboxctl dlq redrive` moves them back to the webhook queue\n", len(list.Messages), approx)
	return nil
}

func parseTS(v string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// waitSeconds long-polls only when more messages are expected: SQS's short
// poll samples a subset of its servers and can come back empty early.
func waitSeconds(have, expected int) int32 {
	if have < expected {
		return 1
	}
	return 0
}

// release makes received messages visible again.
func release(ctx context.Context, client SQS, url string, msgs []sqstypes.Message) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for start := 0; start < len(msgs); start += 10 {
		var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range msgs[start:min(start+10, len(msgs))] {
			entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			})
		}
		// A failure only delays the message's return to its visibility
		// timeout.
		_, _ = client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
	}
}

type redriveOpts struct {
	max            int
	manual, asJSON bool
}

func (a *app) dlqRedriveCmd() *cobra.Command {
	var o redriveOpts
	cmd := &cobra.Command{
		Use:   "redrive [--max N]",
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
second copy as a duplicate.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.max < 0 {
				return usagef("--max must not be negative")
			}
			return a.redrive(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.max, "max", 0, "move at most N messages (0: all); implies --manual")
	f.BoolVar(&o.manual, "manual", false, "move messages with receive/send/delete even where SQS message move tasks are supported")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON (RedriveJSON in docs/cli.md)")
	return cmd
}

func (a *app) redrive(ctx context.Context, o redriveOpts) error {
	client, err := a.sqs(ctx)
	if err != nil {
		return err
	}
	main, dlq, err := a.queues(ctx, client)
	if err != nil {
		return err
	}
	res := RedriveJSON{From: dlq, To: main}
	var moved int
	if !o.manual && o.max == 0 {
		res.Method = "move_task"
		moved, err = a.moveTask(ctx, client, dlq, main)
		if errors.Is(err, errNoMoveTask) {
			res.Method = ""
		} else if err != nil {
			return err
		}
	}
	if res.Method == "" || o.manual || o.max > 0 {
		res.Method = "receive_send_delete"
		moved, err = a.moveEach(ctx, client, dlq, main, o.max)
		if err != nil {
			return fmt.Errorf("%w\n%d message(s) moved before it stopped; nothing was lost (at worst a message is in both queues, which the processor absorbs): run `inboxctl dlq redrive` again to move the rest", err, moved)
		}
	}
	res.Moved = moved
	if res.Remaining, err = approxMessages(ctx, client, dlq); err != nil {
		return a.hint(err)
	}
	if o.asJSON {
		return writeJSON(a.stdout, res)
	}
	how := "SQS message move task"
	if res.Method == "receive_send_delete" {
		how = "receive, send, delete"
	}
	fmt.Fprintf(a.stdout, "moved %d message(s) to the webhook queue (%s); about %d left in the dead-letter queue\n", res.Moved, how, res.Remaining)
	return nil
}

// poll is how often a move task's progress is read.
func (a *app) poll() time.Duration {
	if a.pollEvery > 0 {
		return a.pollEvery
	}
	return time.Second
}

// errNoMoveTask: the endpoint cannot run message move tasks.
var errNoMoveTask = errors.New("message move tasks not supported")

// unsupported reports whether err means the endpoint does not implement
// the operation (moto answers such calls with a bare HTTP 500).
func unsupported(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "InvalidAction",
			"UnknownOperationException", "NotImplemented", "NotImplementedException":
			return true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case 404, 405, 501:
			return true
		case 500:
			// An AWS 500 names its error; an emulator's unimplemented
			// operation does not.
			return ae == nil || ae.ErrorCode() == "" || ae.ErrorCode() == "500" || ae.ErrorCode() == "UnknownError"
		}
	}
	return false
}

// moveTask moves every message with an SQS message move task and follows
// its progress. It returns errNoMoveTask where the endpoint has none.
func (a *app) moveTask(ctx context.Context, client SQS, dlq, main string) (int, error) {
	dlqARN, err := queueAttr(ctx, client, dlq, sqstypes.QueueAttributeNameQueueArn)
	if err != nil {
		return 0, a.hint(err)
	}
	mainARN, err := queueAttr(ctx, client, main, sqstypes.QueueAttributeNameQueueArn)
	if err != nil {
		return 0, a.hint(err)
	}
	_, err = client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlqARN), DestinationArn: aws.String(mainARN),
	}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if unsupported(err) {
			fmt.Fprintln(a.stderr, "inboxctl: this endpoint does not support SQS message move tasks; moving messages one batch at a time")
		} else {
			// Moving them ourselves is safe whatever went wrong: at worst
			// a message is moved twice, and processing is idempotent.
			fmt.Fprintf(a.stderr, "inboxctl: could not start an SQS message move task (%v); moving messages one batch at a time\n", err)
		}
		return 0, errNoMoveTask
	}
	var b bar = noBar{}
	for {
		out, err := client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN), MaxResults: aws.Int32(1)})
		if err != nil {
			if ctx.Err() != nil {
				return 0, goesOn("interrupted", dlqARN)
			}
			return 0, fmt.Errorf("follow the message move task: %w\n%w", err, goesOn("", dlqARN))
		}
		if len(out.Results) == 0 {
			return 0, errors.New("the message move task disappeared: check `aws sqs list-message-move-tasks`")
		}
		t := out.Results[0]
		if total := int(aws.ToInt64(t.ApproximateNumberOfMessagesToMove)); total > 0 {
			if _, ok := b.(noBar); ok {
				b = a.progress(total, "moving")
			}
		}
		switch aws.ToString(t.Status) {
		case "COMPLETED":
			_ = b.Finish()
			return int(t.ApproximateNumberOfMessagesMoved), nil
		case "FAILED", "CANCELLED":
			_ = b.Finish()
			status := aws.ToString(t.Status)
			if reason := aws.ToString(t.FailureReason); reason != "" {
				status += ": " + reason
			}
			return int(t.ApproximateNumberOfMessagesMoved), fmt.Errorf("the message move task ended %s, after moving about %d message(s); "+
				"the others are still in the dead-letter queue, nothing was lost: run `inboxctl dlq redrive` again, or with --manual",
				status, t.ApproximateNumberOfMessagesMoved)
		}
		if pb, ok := b.(interface{ Set(int) error }); ok {
			_ = pb.Set(int(t.ApproximateNumberOfMessagesMoved))
		}
		select {
		case <-ctx.Done():
			return 0, goesOn("interrupted", dlqARN)
		case <-time.After(a.poll()):
		}
	}
}

// goesOn says that a move task inboxctl stopped following goes on without
// it: SQS moves each message atomically, so nothing is lost.
func goesOn(what, dlqARN string) error {
	msg := "the move task goes on in SQS by itself, and nothing is lost (see `aws sqs list-message-move-tasks --source-arn " + dlqARN + "`)"
	if what != "" {
		msg = what + ": " + msg
	}
	return errors.New(msg)
}

// redriveVisibility hides a batch while it is being moved; a message whose
// move was interrupted reappears in the DLQ after it.
const redriveVisibility = 60

// moveEach moves up to max messages (0: all) from dlq to main, a batch at a
// time: send the batch to main, then delete from dlq exactly the messages
// whose send succeeded. A message is therefore always in at least one
// queue; an interruption between the send and the delete leaves it in
// both, and the processor acknowledges the second copy as a duplicate.
func (a *app) moveEach(ctx context.Context, client SQS, dlq, main string, limit int) (moved int, err error) {
	total, err := approxMessages(ctx, client, dlq)
	if err != nil {
		return 0, a.hint(err)
	}
	if limit > 0 {
		total = min(total, limit)
	}
	b := a.progress(total, "moving")
	defer func() { _ = b.Finish() }()
	for limit == 0 || moved < limit {
		if ctx.Err() != nil {
			return moved, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		want := 10
		if limit > 0 {
			want = min(want, limit-moved)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlq),
			MaxNumberOfMessages:         int32(want),
			VisibilityTimeout:           redriveVisibility,
			WaitTimeSeconds:             waitSeconds(moved, total),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return moved, fmt.Errorf("receive from the dead-letter queue: %w", err)
		}
		if len(out.Messages) == 0 {
			return moved, nil
		}
		n, err := a.moveBatch(ctx, client, dlq, main, out.Messages)
		moved += n
		_ = b.Add(n)
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// moveBatch sends msgs to main, then deletes from dlq those sent. It
// returns how many are now only in main.
func (a *app) moveBatch(ctx context.Context, client SQS, dlq, main string, msgs []sqstypes.Message) (int, error) {
	byID := map[string]sqstypes.Message{}
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i, m := range msgs {
		id := strconv.Itoa(i)
		byID[id] = m
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
			Id: aws.String(id), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
		})
	}
	sent, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(main), Entries: entries})
	if err != nil {
		// Nothing is known to be sent: delete nothing. The batch
		// reappears in the DLQ; make it visible now rather than later.
		release(context.WithoutCancel(ctx), client, dlq, msgs)
		return 0, fmt.Errorf("send to the webhook queue: %w", err)
	}
	var unsent []sqstypes.Message
	var failure error
	for _, f := range sent.Failed {
		unsent = append(unsent, byID[aws.ToString(f.Id)])
		failure = fmt.Errorf("send to the webhook queue: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
	}
	release(context.WithoutCancel(ctx), client, dlq, unsent)
	var dels []sqstypes.DeleteMessageBatchRequestEntry
	for _, s := range sent.Successful {
		dels = append(dels, sqstypes.DeleteMessageBatchRequestEntry{Id: s.Id, ReceiptHandle: byID[aws.ToString(s.Id)].ReceiptHandle})
	}
	if len(dels) == 0 {
		return 0, failure
	}
	// The copies are in the webhook queue now: finish the delete even if
	// the operator pressed Ctrl-C meanwhile, so fewer duplicates remain.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	del, err := client.DeleteMessageBatch(dctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(dlq), Entries: dels})
	if err != nil {
		// Sent but not deleted: duplicates, never losses.
		return 0, fmt.Errorf("delete from the dead-letter queue after sending (the messages are now in both queues; the duplicates are harmless): %w", err)
	}
	moved := len(del.Successful)
	if len(del.Failed) > 0 && failure == nil {
		failure = fmt.Errorf("delete from the dead-letter queue after sending: %s (those messages are in both queues; harmless)", aws.ToString(del.Failed[0].Message))
	}
	if failure == nil {
		failure = ctx.Err()
	}
	return moved, failure
}
